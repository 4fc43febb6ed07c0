package narrow

import "math"

// F16 rounds f to binary16, nearest with ties to even, as VCVTPS2PH
// does with rounding mode 0: magnitudes past the largest finite value
// become infinities, a NaN stays a NaN (quiet, its payload's top bits
// kept), and binary16's subnormals are produced exactly.
func F16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp, man := int(b>>23)&0xff, b&0x7fffff
	if exp == 0xff {
		if man == 0 {
			return sign | 0x7c00
		}
		return sign | 0x7e00 | uint16(man>>13)
	}
	e := exp - 127 + 15 // binary16's biased exponent
	if e >= 1 {
		// Normal: drop 13 mantissa bits, rounding; a carry moves into the
		// exponent (up to infinity), as the encoding is ordered.
		h := uint32(e)<<10 | man>>13
		if rem := man & 0x1fff; rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
			h++
		}
		if h >= 0x7c00 {
			return sign | 0x7c00
		}
		return sign | uint16(h)
	}
	// Subnormal or zero in binary16: units of 2^-24.
	if exp == 0 {
		return sign // a float32 subnormal is below 2^-126
	}
	shift := uint(14 - e) // m * 2^(exp-150) in units of 2^-24 is m >> (14-e)
	if shift > 24 {
		return sign // below half the smallest subnormal
	}
	m := man | 0x800000
	h := m >> shift
	half := uint32(1) << (shift - 1)
	if rem := m & (half<<1 - 1); rem > half || rem == half && h&1 == 1 {
		h++ // may become the smallest normal, which is the next encoding
	}
	return sign | uint16(h)
}

// FromF16 widens a binary16 value exactly.
func FromF16(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp, man := uint32(h>>10)&0x1f, uint32(h&0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: man * 2^-24, normalised.
	e := uint32(127 - 15 + 1)
	for man&0x400 == 0 {
		man <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
}

// BF16 rounds f to bfloat16 (its top 16 bits), nearest with ties to
// even; a NaN stays a quiet NaN with its sign.
func BF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// FromBF16 is the float32 a bfloat16 stands for.
func FromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }
