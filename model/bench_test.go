package model

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
)

// BenchmarkTrainStep reports tokens/s and GFLOP/s (6 * params * tokens) of full
// training steps at small sizes; `corl bench train` runs the same at any size.
func BenchmarkTrainStep(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  Config
		B, T int
	}{
		{"gpt2-L4-C128-V256-B16-T64", Config{Family: GPT2, Layers: 4, Dim: 128, Heads: 4, Vocab: 256, MaxSeq: 64}, 16, 64},
		{"llama-L4-C128-GQA-V256-B16-T64", Config{Family: Llama, Layers: 4, Dim: 128, Heads: 4, KVHeads: 2, Vocab: 256, MaxSeq: 64}, 16, 64},
	} {
		b.Run(fmt.Sprintf("%s", tc.name), func(b *testing.B) {
			m, err := New(cpu.New(0), tc.cfg, 1)
			if err != nil {
				b.Fatal(err)
			}
			batch := randBatch(rand.New(rand.NewPCG(1, 2)), tc.B, tc.T, tc.cfg.Vocab)
			batch.Weights = nil
			opt := DefaultOptim(1e-4)
			for b.Loop() {
				if _, err := m.TrainStep(batch, opt); err != nil {
					b.Fatal(err)
				}
			}
			tok := float64(tc.B*tc.T) * float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(tok, "tokens/s")
			b.ReportMetric(6*float64(m.NumParams())*tok/1e9, "GFLOP/s")
		})
	}
}
