package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/corl-project/corl/gpu"
)

// TestAdamWKernelMatchesGo: the vector AdamW gives, bit for bit, the
// portable loop's weights and moments, over steps, lengths off the vector
// width, and values from denormal to huge (zeros and negative zeros
// included).
func TestAdamWKernelMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	val := func() float32 {
		switch r.IntN(10) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		case 2:
			return float32(r.NormFloat64()) * 1e-40 // denormal
		case 3:
			return float32(r.NormFloat64()) * 1e30
		}
		return float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-6)))
	}
	for _, kern := range vectorKernels(t) {
		for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 31, 40, 1001} {
			init := make([][]float32, 4)
			for i := range init {
				init[i] = make([]float32, n)
				for j := range init[i] {
					init[i][j] = val()
				}
				if i == 3 { // v, a second moment, is not negative
					for j, x := range init[i] {
						init[i][j] = float32(math.Abs(float64(x)))
					}
				}
			}
			run := func(k string) [][]float32 {
				SetKernel(k)
				defer SetKernel("")
				be := New(2)
				bufs := make([]gpu.Buffer, 4)
				for i := range bufs {
					bufs[i] = Wrap(append([]float32(nil), init[i]...))
				}
				for step := 1; step <= 3; step++ {
					be.AdamW(bufs[0], bufs[1], bufs[2], bufs[3], n, gpu.AdamWParams{LR: 3e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8,
						WeightDecay: 0.1, Step: step, GradScale: 0.37})
				}
				out := make([][]float32, 4)
				for i := range out {
					out[i] = Data(bufs[i])
				}
				return out
			}
			want, got := run("go"), run(kern)
			for i, name := range []string{"p", "g", "m", "v"} {
				for j := range want[i] {
					w, g := want[i][j], got[i][j]
					if math.Float32bits(w) != math.Float32bits(g) && !(w != w && g != g) {
						t.Fatalf("%s, n=%d: %s[%d] = %v (%#08x), portable loop %v (%#08x)", kern, n, name, j, g, math.Float32bits(g), w, math.Float32bits(w))
					}
				}
			}
		}
	}
}

// TestSumSquaresKernelMatchesGo: the vector lanes give every chunk's
// in-order sum the loop's bits, and SumSquares's total is the loop's, over
// chunk counts on and off the lane count and a partial last chunk.
func TestSumSquaresKernelMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, kern := range vectorKernels(t) {
		for _, n := range []int{16 * sumChunk, 16*sumChunk + 1, 35*sumChunk + 777, 3 * sumChunk} {
			d := make([]float32, n)
			for i := range d {
				d[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(13)-6)))
			}
			want := make([]float64, n/sumChunk)
			for c := range want {
				for _, v := range d[c*sumChunk : (c+1)*sumChunk] {
					want[c] += float64(v) * float64(v)
				}
			}
			SetKernel(kern)
			got := make([]float64, len(want))
			done := sumSquaresChunksVec(got, d[:len(want)*sumChunk])
			vec := New(2).SumSquares(Wrap(d), n)
			SetKernel("go")
			loop := New(2).SumSquares(Wrap(d), n)
			SetKernel("")
			if done != len(want)&^15 {
				t.Fatalf("%s, n=%d: the kernel did %d of %d chunks", kern, n, done, len(want))
			}
			for c := 0; c < done; c++ {
				if math.Float64bits(got[c]) != math.Float64bits(want[c]) {
					t.Fatalf("%s, n=%d: chunk %d sums to %v, in order %v", kern, n, c, got[c], want[c])
				}
			}
			if math.Float64bits(vec) != math.Float64bits(loop) {
				t.Fatalf("%s, n=%d: SumSquares %v, the loop's %v", kern, n, vec, loop)
			}
		}
	}
}

// BenchmarkAdamW is a step of GPT-2 124M's weights.
func BenchmarkAdamW(b *testing.B) {
	const n = 124 << 20
	be := New(0)
	p, g, m, v := be.Alloc(n), be.Alloc(n), be.Alloc(n), be.Alloc(n)
	for _, x := range []gpu.Buffer{p, g, m, v} {
		d := Data(x)
		for i := range d {
			d[i] = 1e-3 * float32(i%7)
		}
	}
	b.Run(fmt.Sprintf("124M/%s", kernelName), func(b *testing.B) {
		for b.Loop() {
			be.AdamW(p, g, m, v, n, gpu.AdamWParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: 3, GradScale: 1})
		}
		b.ReportMetric(float64(n)*28*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	})
}
