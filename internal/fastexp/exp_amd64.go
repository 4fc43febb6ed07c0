//go:build amd64 && !purego

package fastexp

import "golang.org/x/sys/cpu"

// The kernels repeat math.Exp's fused multiply-add path, which the math
// package takes on every CPU with AVX and FMA: eight lanes with AVX-512
// (which implies both), four with AVX2 and FMA.
var (
	useAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX && cpu.X86.HasFMA
	useAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

//go:noescape
func shiftedExpAVX512(dst, src *float64, shift float64, n int) int

//go:noescape
func shiftedExpAVX2(dst, src *float64, shift float64, n int) int

// shiftedExpVec computes whole chunks of eight from the start and returns
// how many elements it did: all the whole chunks, or those before the first
// chunk with an argument outside the kernel's range (the AVX2 kernel may
// stop halfway into a chunk, at four).
func shiftedExpVec(dst, src []float64, shift float64) int {
	n := len(src) &^ 7
	if !(useAVX512 || useAVX2) || n == 0 {
		return 0
	}
	_ = dst[n-1]
	if !useAVX512 {
		return shiftedExpAVX2(&dst[0], &src[0], shift, n)
	}
	return shiftedExpAVX512(&dst[0], &src[0], shift, n)
}
