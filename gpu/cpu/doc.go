// Package cpu is the pure-Go implementation of gpu.Backend and the numerical
// reference for every other backend.
//
// It uses every core through a fork-join helper (parallel.go) and never lets the
// partition of work change a result: each output element is computed by one
// goroutine in a fixed order, and reductions across rows run over fixed-size
// chunks summed in chunk order. So a model moved to a machine with another core
// count continues bitwise identically.
//
// Matrix multiplication is the hot path and is written here rather than taken
// from a library: gonum's pure-Go Sgemm reaches about a tenth of this machine's
// peak, and cgo BLAS would break the single static binary. sgemm.go holds a
// blocked, packed GEMM whose inner 12x32 tile runs in AVX-512 assembly
// (sgemm_amd64.s) when the CPU has it, as four 6x16 AVX2 tiles on x86 without
// it, in NEON on arm64, with a portable Go kernel otherwise, and the naive
// triple loop kept beside it as the reference the tests compare against. The
// other hot loops (decoding attention, the activations, softmax rows, norms)
// have AVX-512 kernels and AVX2 twins that give the same bits, so a run moves
// between such machines bitwise.
package cpu
