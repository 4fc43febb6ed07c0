package fastexp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestShiftedExpMatchesMathExp: every result has math.Exp's bits, for
// arguments across the whole range (the kernel's own and the subnormal,
// underflowing and overflowing ones it leaves to math.Exp), the edges of
// its range, infinities and NaN, at every length past two chunks.
func TestShiftedExpMatchesMathExp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var src []float64
	for range 20000 {
		src = append(src, (r.Float64()*2-1)*30)
	}
	for range 2000 {
		src = append(src, (r.Float64()*2-1)*800)
	}
	for _, x := range []float64{0, -0.0, 1, -1, -708, -708.0000001, -707.9999999, 709, 709.0000001, 708.9999999,
		-745.2, -745.1, -744, -1000, 710, 1e-300, -1e-300, math.Inf(1), math.Inf(-1), math.NaN(), math.Ln2 / 2, -math.Ln2 / 2} {
		src = append(src, x)
	}
	for _, shift := range []float64{0, 3.5, -12.25} {
		dst := make([]float64, len(src))
		ShiftedExp(dst, src, shift)
		for i, x := range src {
			want := math.Exp(x - shift)
			if math.Float64bits(dst[i]) != math.Float64bits(want) && !(math.IsNaN(want) && math.IsNaN(dst[i])) {
				t.Fatalf("shift %v: exp(%v) = %v (%#x), math.Exp %v (%#x)", shift, x-shift, dst[i], math.Float64bits(dst[i]), want, math.Float64bits(want))
			}
		}
	}
	for n := 0; n <= 19; n++ {
		dst := make([]float64, n+1)
		dst[n] = 42
		ShiftedExp(dst[:n], src[:n], 1)
		for i := 0; i < n; i++ {
			if want := math.Exp(src[i] - 1); math.Float64bits(dst[i]) != math.Float64bits(want) {
				t.Fatalf("length %d: element %d is %v, math.Exp %v", n, i, dst[i], want)
			}
		}
		if dst[n] != 42 {
			t.Fatalf("length %d: wrote past the end", n)
		}
	}
}

func BenchmarkShiftedExp(b *testing.B) {
	src := make([]float64, 257)
	for i := range src {
		src[i] = -float64(i) / 16
	}
	dst := make([]float64, len(src))
	b.Run("kernel", func(b *testing.B) {
		for b.Loop() {
			ShiftedExp(dst, src, 0.5)
		}
	})
	b.Run("math.Exp", func(b *testing.B) {
		for b.Loop() {
			for i, x := range src {
				dst[i] = math.Exp(x - 0.5)
			}
		}
	})
}
