// Package cuda is corl's GPU backend: every op of gpu.Backend as a CUDA C
// kernel (kernels/*.cu, one op per file), compiled to PTX by `go generate`
// (nvcc, compute_80 and compute_90) and embedded in the binary, loaded at run
// time through the CUDA driver API (libcuda.so.1, or the library
// $CORL_CUDA_DRIVER names, opened with purego: no cgo, no toolkit needed to
// build). Without a driver or device New returns an error wrapping
// ErrNoDevice and callers stay on the CPU backend. GEMM goes through cuBLAS
// where the library is present (cublasSgemm; TF32 only when asked for), and
// through corl's own kernel otherwise.
//
// The kernels are the project's own because determinism is a requirement
// (a resumed run must equal the uninterrupted one): reductions are fixed
// trees over a fixed block size, scatter-adds are grouped on the host instead
// of using atomics, and every output's sum runs in one fixed order. They are
// written for correctness first.
//
// emu/ is an emulated driver for tests (make cuda-emu): the same kernel
// sources built for the host, behind the driver API and a cuBLAS stand-in,
// faulting where a GPU would. The conformance suite runs on it in CI; what it
// cannot prove (timing, the memory model between blocks, nvcc's code) needs
// a GPU: scripts/gpu-check.sh.
package cuda
