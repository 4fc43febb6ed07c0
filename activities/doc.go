// Package activities holds corl's Temporal activities: the round's stages
// (acquire a member, generate, judge, grade, update, checkpoint, evaluate,
// replay) as methods on a struct that carries their dependencies: the blob
// store, the compute backend, this worker's own task queue and the models it
// holds. Everything large moves through the blob store under keys derived
// from (run, round, member), so a retried activity overwrites its own output
// and an update is never applied twice. What they take and return is
// package pipeline's.
//
// The models a worker holds (the held-member cache: weights, optimizer
// state, the round they are at, the update results kept for idempotent
// retries) live here and not in package workers, though they are the
// worker's state: every activity but Workers resolves its MemberRef
// against them, Acquire and Release are what fill and empty them, and the
// exclusive device lock that orders those reads is the same one. Apart,
// the cache would be a second package exporting its internals to this one
// (workers imports activities to register them, so it could not be the
// other way round). Package workers starts, configures and stops a worker:
// queues, slots, the pool's heartbeat, SIGTERM's checkpoints, reclaiming
// members of closed runs through this package's ReclaimClosed.
package activities
