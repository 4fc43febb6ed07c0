// Package pipeline is what the cohort workflow and its activities say to
// each other: the task queues, the activities' names, their inputs and
// outputs, the error types the workflow acts on, and how a GPU worker
// names itself to the pool (PoolIdentity, read back by the placement's
// worker list) and records leaving it (LeftKey). It holds no code that
// computes, so the workflows import it and neither the activities nor what
// they need (the AWS SDK, the compute backends, viper).
package pipeline
