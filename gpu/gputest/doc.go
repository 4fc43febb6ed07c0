// Package gputest is the conformance suite every gpu.Backend passes: each op's
// forward against a float64 reference on random shapes (including odd and size-1
// ones), each backward against float64 central finite differences of that
// reference, accumulation semantics (+=) and run-to-run determinism. A backend's
// test file calls RunAll in one line.
package gputest
