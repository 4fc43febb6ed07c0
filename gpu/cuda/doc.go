// Package cuda is corl's GPU backend: every op of gpu.Backend as a CUDA C
// kernel (kernels/*.cu, one op per file), compiled to PTX by `go generate`
// (nvcc, compute_80 and compute_90) and embedded in the binary, loaded at run
// time through the CUDA driver API (libcuda.so.1, opened with purego: no cgo,
// no toolkit needed to build). Without a driver or device New returns an
// error wrapping ErrNoDevice and callers stay on the CPU backend.
//
// The kernels are the project's own because determinism is a requirement
// (a resumed run must equal the uninterrupted one): reductions are fixed
// trees over a fixed block size, scatter-adds are grouped on the host instead
// of using atomics, and every output's sum runs in one fixed order. They are
// written for correctness first; speed work (tensor cores, fused kernels,
// cuBLAS) comes after the conformance suite has run on a device.
package cuda
