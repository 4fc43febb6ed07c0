// Package modeltest writes tiny random checkpoints for tests that need a
// base model on disk.
package modeltest
