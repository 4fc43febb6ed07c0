// Package fastexp computes exp over float64 slices with math.Exp's bits,
// eight at a time on AVX-512, four on AVX2. Sampling takes one exp per
// vocabulary entry for every generated token, so this is a large share of
// a small model's decoding; it is written here, in assembly, because no
// library gives math.Exp's exact results in vector form, and a sampled
// token must not depend on whether the machine has the vector unit.
package fastexp

import "math"

// ShiftedExp sets dst[i] = math.Exp(src[i] - shift), bitwise, for i <
// len(src) (dst at least as long).
func ShiftedExp(dst, src []float64, shift float64) {
	dst = dst[:len(src)]
	i := 0
	for i < len(src) {
		i += shiftedExpVec(dst[i:], src[i:], shift)
		// The kernel stopped at the end of its whole chunks or at a chunk
		// with an argument outside its range (under about -708, where the
		// result is subnormal or zero, over 709, or not a number): that
		// chunk (or the tail) goes one at a time.
		for end := min(i+8, len(src)); i < end; i++ {
			dst[i] = math.Exp(src[i] - shift)
		}
	}
}
