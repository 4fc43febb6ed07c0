// Package kernelsrc hashes the CUDA kernel sources, for the PTX generator and
// the test that refuses stale PTX.
package kernelsrc
