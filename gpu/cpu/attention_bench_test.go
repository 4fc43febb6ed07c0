package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/corl-project/corl/gpu"
)

// BenchmarkTrainAttention is one layer's attention forward and backward
// over a training micro-batch (6 sequences of 88 positions, causal) on one
// thread, at the zoo's head shapes (llama 4 x 64: 4 heads of 16 sharing 2
// key heads; gpt2 3 x 96: 4 heads of 24) and a wider one (4 heads of 64).
func BenchmarkTrainAttention(b *testing.B) {
	for _, c := range []struct {
		name        string
		nh, nkv, hs int
	}{{"llama-hs16", 4, 2, 16}, {"gpt2-hs24", 4, 4, 24}, {"hs64", 4, 4, 64}} {
		const B, T = 6, 88
		s := gpu.AttnShape{B: B, Tq: T, Tk: T, Tcap: T, NH: c.nh, NKV: c.nkv, HS: c.hs}
		C, CKV := c.nh*c.hs, c.nkv*c.hs
		r := rand.New(rand.NewPCG(1, 2))
		q, k, v := Wrap(randSlice(r, B*T*C)), Wrap(randSlice(r, B*T*CKV)), Wrap(randSlice(r, B*T*CKV))
		dout := Wrap(randSlice(r, B*T*C))
		out, att := Wrap(make([]float32, B*T*C)), Wrap(make([]float32, B*c.nh*T*T))
		dq, dk, dv := Wrap(make([]float32, B*T*C)), Wrap(make([]float32, B*T*CKV)), Wrap(make([]float32, B*T*CKV))
		be := New(1)
		// Causal products: scores and mix forward, four products backward.
		flops := float64(B*c.nh) * float64(T*(T+1)/2) * float64(c.hs) * 2 * 6
		b.Run(c.name+"/forward", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				be.AttentionForward(out, att, q, k, v, s)
			}
			b.ReportMetric(flops/3*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(c.name+"/backward", func(b *testing.B) {
			be.AttentionForward(out, att, q, k, v, s)
			for i := 0; i < b.N; i++ {
				be.AttentionBackward(dq, dk, dv, dout, att, q, k, v, s)
			}
			b.ReportMetric(flops*2/3*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
