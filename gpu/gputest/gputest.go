package gputest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/corl-project/corl/gpu"
)

// harness wraps a backend with float64 host helpers for tests.
type harness struct {
	t  *testing.T
	be gpu.Backend
	r  *rand.Rand
}

func (h *harness) up(x []float64) gpu.Buffer {
	if x == nil {
		return nil
	}
	b := h.be.Alloc(len(x))
	f := make([]float32, len(x))
	for i, v := range x {
		f[i] = float32(v)
	}
	h.be.Upload(b, f)
	return b
}

func (h *harness) down(b gpu.Buffer) []float64 {
	f := make([]float32, b.Len())
	h.be.Download(f, b)
	if err := h.be.Sync(); err != nil {
		h.t.Fatalf("sync: %v", err)
	}
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

// rnd returns n values uniform in [-scale, scale], rounded to float32 so the
// reference sees exactly what the backend sees.
func (h *harness) rnd(n int, scale float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(float32((h.r.Float64()*2 - 1) * scale))
	}
	return x
}

func (h *harness) ids(n, V int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(h.r.IntN(V))
	}
	return s
}

// close fails unless |got-want| <= atol + rtol*|want| everywhere.
func (h *harness) close(name string, got, want []float64, atol, rtol float64) {
	h.t.Helper()
	if len(got) < len(want) {
		h.t.Fatalf("%s: got %d values, want %d", name, len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if math.IsNaN(g) || math.Abs(g-w) > atol+rtol*math.Abs(w) {
			h.t.Fatalf("%s: [%d] = %.7g, want %.7g (diff %.3g, tol %.3g)", name, i, g, w, math.Abs(g-w), atol+rtol*math.Abs(w))
		}
	}
}

// RunAll runs the whole conformance suite against be.
func RunAll(t *testing.T, be gpu.Backend) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(h *harness)
	}{
		{"Embedding", testEmbedding},
		{"MatMul", testMatMul},
		{"MatMulLarge", testMatMulLarge},
		{"AttentionLarge", testAttentionLarge},
		{"RMSNorm", testRMSNorm},
		{"LayerNorm", testLayerNorm},
		{"RoPE", testRoPE},
		{"Attention", testAttention},
		{"GELU", testGELU},
		{"SwiGLU", testSwiGLU},
		{"AddScale", testAddScale},
		{"Softmax", testSoftmax},
		{"TokenLogProbs", testTokenLogProbs},
		{"SumSquares", testSumSquares},
		{"AdamW", testAdamW},
		{"Deterministic", testDeterministic},
		{"FlashAttention", testFlashAttention},
		{"BF16Weights", testBF16Weights},
		{"BF16Compute", testBF16Compute},
		{"BF16Backward", testBF16Backward},
		{"HalfKV", testHalfKV},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(&harness{t: t, be: be, r: rand.New(rand.NewPCG(uint64(i)+1, 42))})
		})
	}
}

// gradCheck verifies a backward op. ins are the forward inputs; ref computes the
// forward in float64; analytic receives a random upstream gradient dout and
// returns the backend's gradient for each input (nil to skip one). The loss is
// L = sum(ref(ins) * dout), differentiated by central differences.
func (h *harness) gradCheck(name string, ins [][]float64, ref func([][]float64) []float64, dout []float64,
	analytic [][]float64, atol, rtol float64) {
	h.t.Helper()
	// Step 1e-6 in float64: truncation error O(step^2) and rounding O(1e-16/step)
	// both sit far below the float32 tolerances checked here.
	const step = 1e-6
	loss := func() float64 {
		s := 0.0
		for i, v := range ref(ins) {
			s += v * dout[i]
		}
		return s
	}
	for k, in := range ins {
		if analytic[k] == nil {
			continue
		}
		num := make([]float64, len(in))
		for j := range in {
			orig := in[j]
			in[j] = orig + step
			lp := loss()
			in[j] = orig - step
			lm := loss()
			in[j] = orig
			num[j] = (lp - lm) / (2 * step)
		}
		h.close(fmt.Sprintf("%s d(input %d)", name, k), analytic[k], num, atol, rtol)
	}
}

// accum returns the gradient a backward op added: after - before.
func sub(after, before []float64) []float64 {
	out := make([]float64, len(after))
	for i := range after {
		out[i] = after[i] - before[i]
	}
	return out
}
