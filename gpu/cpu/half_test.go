package cpu

import (
	"fmt"
	"github.com/corl-project/corl/internal/narrow"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/corl-project/corl/gpu"
)

// halfNeighbours returns the binary16 values just below and above x's
// magnitude range as float64, for the rounding check: lo <= |x| <= hi.
func nearestHalf(x float32) uint16 {
	// The reference: the finite binary16 value nearest to x, ties to the
	// even encoding, found by search over every encoding of x's sign;
	// past 65520 (halfway from the largest finite value to 2^16) infinity.
	ax := math.Abs(float64(x))
	sign := uint16(0)
	if math.Signbit(float64(x)) {
		sign = 0x8000
	}
	if ax >= 65520 {
		return sign | 0x7c00
	}
	lo, hi := uint16(0), uint16(0x7bff) // the largest encoding whose value is <= ax
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if float64(narrow.FromF16(mid)) <= ax {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if float64(narrow.FromF16(lo)) == ax || lo == 0x7bff {
		if lo == 0x7bff && ax > 65504 {
			// between the largest finite value and the overflow threshold
			return sign | 0x7bff
		}
		return sign | lo
	}
	dl, dh := ax-float64(narrow.FromF16(lo)), float64(narrow.FromF16(lo+1))-ax
	if dh < dl || dh == dl && (lo+1)&1 == 0 {
		return sign | (lo + 1)
	}
	return sign | lo
}

// halfCases are float32 values around every binary16 exponent and its
// rounding boundaries, plus random ones of every float32 exponent.
func halfCases() []float32 {
	r := rand.New(rand.NewPCG(21, 22))
	var xs []float32
	for h := 0; h < 0x7c00; h++ {
		v := narrow.FromF16(uint16(h))
		next := narrow.FromF16(uint16(h + 1))
		if h == 0x7bff {
			next = 65536
		}
		mid := float32((float64(v) + float64(next)) / 2)
		for _, x := range []float32{v, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			xs = append(xs, x, -x)
		}
	}
	for e := 0; e < 255; e++ {
		for i := 0; i < 64; i++ {
			xs = append(xs, math.Float32frombits(uint32(e)<<23|r.Uint32()&0x7fffff|r.Uint32()&0x80000000))
		}
	}
	return append(xs, 65504, 65519.99, 65520, 1e6, float32(math.Inf(1)), float32(math.Inf(-1)), 0x1p-25, 0x1p-26, math.SmallestNonzeroFloat32)
}

func TestF32ToF16RoundsToNearestEven(t *testing.T) {
	for _, x := range halfCases() {
		if got, want := narrow.F16(x), nearestHalf(x); got != want {
			t.Fatalf("narrow.F16(%g = %#08x) = %#04x, want %#04x", x, math.Float32bits(x), got, want)
		}
	}
	// NaNs stay NaNs, quiet, with their payload's top bits.
	for _, b := range []uint32{0x7fc00000, 0x7f800001, 0xffa00000, 0x7fffffff} {
		h := narrow.F16(math.Float32frombits(b))
		if h&0x7c00 != 0x7c00 || h&0x200 == 0 || h&0x8000 != uint16(b>>16)&0x8000 || h&0x1ff != uint16(b>>13)&0x1ff {
			t.Fatalf("narrow.F16(NaN %#08x) = %#04x", b, h)
		}
	}
	// Widening is exact: every finite encoding comes back from its value.
	for h := 0; h < 0x10000; h++ {
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue
		}
		if got := narrow.F16(narrow.FromF16(uint16(h))); got != uint16(h) {
			t.Fatalf("narrow.F16(narrow.FromF16(%#04x)) = %#04x", h, got)
		}
	}
}

// TestHalfStoreMatchesTheHardware checks the vector store (VCVTPS2PH and
// back) against f32ToF16 and f16ToF32 on every case, NaNs included.
func TestHalfStoreMatchesTheHardware(t *testing.T) {
	xs := halfCases()
	for _, b := range []uint32{0x7fc00000, 0x7f800001, 0xffa00000, 0x7fffffff} {
		xs = append(xs, math.Float32frombits(b))
	}
	for len(xs)%8 != 0 {
		xs = append(xs, 0)
	}
	for _, kern := range vectorKernels(t) {
		SetKernel(kern)
		src := append([]float32(nil), xs...)
		dst := make([]uint16, len(xs))
		n := storeHalfVec(dst, src)
		SetKernel("")
		if n == 0 {
			t.Skipf("%s: this CPU has no F16C", kern)
		}
		for i, x := range xs[:n] {
			want := narrow.F16(x)
			if dst[i] != want || math.Float32bits(src[i]) != math.Float32bits(narrow.FromF16(want)) {
				t.Fatalf("%s: %g (%#08x) stored as %#04x and widened to %#08x; want %#04x and %#08x",
					kern, x, math.Float32bits(x), dst[i], math.Float32bits(src[i]), want, math.Float32bits(narrow.FromF16(want)))
			}
		}
	}
}

// TestHalfAttentionMatchesFloat32OverTheStoredValues stores keys and
// values in a half cache and requires AttentionForwardHalf to give, bit
// for bit, AttentionForward's outputs and probabilities over a float32
// cache holding the stored values, for every kernel the CPU has (the
// portable loops included) and shapes that take every path: head sizes
// with and without the vector kernels, grouped heads, key counts that are
// not multiples of four or past a mix block.
func TestHalfAttentionMatchesFloat32OverTheStoredValues(t *testing.T) {
	vec, _ := availableVectorKernels()
	kerns := append([]string{"go"}, vec...)
	for _, sh := range []struct{ B, NH, NKV, HS, Tcap int }{
		{5, 4, 4, 64, 80},
		{3, 8, 2, 32, 40},
		{2, 4, 1, 16, 9},
		{3, 2, 2, 16, 12}, // heads not in fours: the portable mix
		{2, 4, 2, 8, 20},  // head sizes off the binary16 kernels: widened rows
		{3, 4, 2, 24, 30}, // through the float32 ones
		{2, 3, 3, 6, 7},   // and an odd head count
	} {
		r := rand.New(rand.NewPCG(uint64(sh.B*100+sh.HS), 23))
		C, CKV := sh.NH*sh.HS, sh.NKV*sh.HS
		klen := make([]int32, sh.B)
		tk := 0
		for b := range klen {
			klen[b] = int32(1 + r.IntN(sh.Tcap))
			tk = max(tk, int(klen[b]))
		}
		klen[0] = int32(sh.Tcap) // a full slot
		tk = sh.Tcap
		s := gpu.AttnShape{B: sh.B, Tq: 1, Tk: tk, Tcap: sh.Tcap, NH: sh.NH, NKV: sh.NKV, HS: sh.HS, KLen: klen}
		q := randSlice(r, sh.B*C)
		rows := sh.B * sh.Tcap
		kf, vf := randSlice(r, rows*CKV), randSlice(r, rows*CKV)
		for i := range kf {
			kf[i] *= 4 // values that binary16 rounds
		}
		be := New(2)
		kh, vh := be.Alloc(rows*CKV/2), be.Alloc(rows*CKV/2)
		at := make([]int, rows)
		for b := 0; b < sh.B; b++ {
			for t0 := 0; t0 < sh.Tcap; t0++ {
				at[b*sh.Tcap+t0] = (b*sh.NKV*sh.Tcap + t0) * sh.HS
			}
		}
		kw, vw := append([]float32(nil), kf...), append([]float32(nil), vf...)
		be.StoreHalf(kh, at, Wrap(kw), sh.NKV, sh.HS, sh.Tcap)
		be.StoreHalf(vh, at, Wrap(vw), sh.NKV, sh.HS, sh.Tcap)
		for i := range kf {
			if kw[i] != narrow.FromF16(narrow.F16(kf[i])) {
				t.Fatalf("%+v: stored key %d left as %g, want %g", sh, i, kw[i], narrow.FromF16(narrow.F16(kf[i])))
			}
		}
		for _, kern := range kerns {
			t.Run(fmt.Sprintf("%dx%dx%dx%d/%s", sh.B, sh.NH, sh.NKV, sh.HS, kern), func(t *testing.T) {
				SetKernel(kern)
				defer SetKernel("")
				wantOut, wantAtt := be.Alloc(sh.B*C), be.Alloc(sh.B*sh.NH*tk)
				be.AttentionForward(wantOut, wantAtt, Wrap(q), Wrap(kw), Wrap(vw), s)
				out, att := be.Alloc(sh.B*C), be.Alloc(sh.B*sh.NH*tk)
				be.AttentionForwardHalf(out, att, Wrap(q), kh, vh, s)
				for i, w := range Data(wantAtt) {
					if g := Data(att)[i]; math.Float32bits(g) != math.Float32bits(w) {
						t.Fatalf("probability %d: %g, want %g", i, g, w)
					}
				}
				for i, w := range Data(wantOut) {
					if g := Data(out)[i]; math.Float32bits(g) != math.Float32bits(w) {
						t.Fatalf("output %d (slot %d of %d keys): %g, want %g", i, i/C, klen[i/C], g, w)
					}
				}
			})
		}
	}
}
