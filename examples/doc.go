// Package examples ships the project's example run specs and the base
// models the quickstart trains (byte-level, two families, from the zoo),
// embedded so that `corl quickstart` works from any directory. Regenerate
// the bases with `make zoo` (deterministic: same bytes on any machine with
// the same kernels).
package examples
