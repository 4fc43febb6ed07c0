//go:build amd64 && !purego

package fastexp

import "golang.org/x/sys/cpu"

// useVec: the kernel repeats math.Exp's fused multiply-add path, which the
// math package takes on every CPU with AVX and FMA; AVX-512 implies both.
var useVec = cpu.X86.HasAVX512F && cpu.X86.HasAVX && cpu.X86.HasFMA

//go:noescape
func shiftedExpAVX512(dst, src *float64, shift float64, n int) int

// shiftedExpVec computes whole chunks of eight from the start and returns
// how many elements it did: all the whole chunks, or those before the first
// chunk with an argument outside the kernel's range.
func shiftedExpVec(dst, src []float64, shift float64) int {
	n := len(src) &^ 7
	if !useVec || n == 0 {
		return 0
	}
	_ = dst[n-1]
	return shiftedExpAVX512(&dst[0], &src[0], shift, n)
}
