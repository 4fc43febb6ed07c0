package cpu

import "math"

// exp32 is exp for float32 after Cephes' expf: range reduction by ln 2 in two
// parts and a degree-6 polynomial, within 2 ulp on [-87, 88]. It is several
// times faster than math.Exp and keeps the activations' transcendental
// functions off the profile.
func exp32(x float32) float32 {
	// Clamp instead of branching to special cases: below -87.3 the result
	// underflows to (nearly) zero, above 88.7 it would overflow float32.
	x = min(max(x, -87.3), 88.7)
	// Round x*log2(e) to the nearest integer with the 1.5*2^23 trick (float32
	// adds are not reassociated by the compiler).
	t := x*1.44269504088896341 + 12582912
	n := t - 12582912
	r := x - n*0.693359375 + n*2.12194440e-4
	z := r * r
	y := ((((1.9875691500e-4*r+1.3981999507e-3)*r+8.3334519073e-3)*r+4.1665795894e-2)*r+1.6666665459e-1)*r + 5.0000001201e-1
	y = y*z + r + 1
	return y * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// tanh32 is tanh via exp32: sign(x) * (1 - 2/(exp(2|x|)+1)).
func tanh32(x float32) float32 {
	ax := x
	if ax < 0 {
		ax = -ax
	}
	if ax > 9 { // tanh(9) rounds to 1 in float32
		ax = 1
	} else {
		ax = 1 - 2/(exp32(2*ax)+1)
	}
	if x < 0 {
		return -ax
	}
	return ax
}

func sigmoid32(x float32) float32 { return 1 / (1 + exp32(-x)) }
