// Package atomicfile writes files so that a reader (or a crash) never sees a
// half-written one: a temporary file in the same directory, fsynced, then
// renamed over the target.
package atomicfile
