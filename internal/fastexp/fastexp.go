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
