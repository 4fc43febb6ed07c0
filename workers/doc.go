// Package workers runs corl's Temporal workers. A GPU worker polls the pool
// queue (corl-gpu) for placements and its own queue for the work of the
// members it holds (the worker-specific task queue pattern), so a member's
// weights stay on the device between activities. A CPU worker polls corl-cpu
// for grading and corl for workflow tasks. On a stop notice (SIGTERM, a spot
// instance's warning) a GPU worker finishes its running activity, checkpoints
// every member it holds, then exits.
package workers
