// Command gen compiles gpu/cuda/kernels/all.cu to PTX for compute_80 and
// compute_90 with nvcc and writes kernels_compute{80,90}.ptx, each headed by
// the sha256 of the kernel sources so that a test can tell stale PTX. Run
// from gpu/cuda through `go generate`.
package main
