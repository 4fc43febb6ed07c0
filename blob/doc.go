// Package blob stores corl's large objects (rollouts, grades, checkpoints)
// outside Temporal: a local directory or any S3-compatible store. Keys are
// derived from (run, round, member, step), so a retried activity overwrites
// its own output. Checkpoints are written objects first and a manifest with
// each object's sha256 last; a reader verifies every checksum and refuses a
// partial or corrupt checkpoint.
package blob
