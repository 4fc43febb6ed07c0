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

// BenchmarkTrainStepLoRA is a training step with every weight trained
// against one with LoRA adapters (r 16, every projection) and the weights
// frozen: the adapters skip the weights' gradients (a third of a step's
// matmuls) and AdamW over every weight.
func BenchmarkTrainStepLoRA(b *testing.B) {
	cfg := Config{Family: Llama, Layers: 4, Dim: 256, Heads: 4, KVHeads: 2, Hidden: 704, Vocab: 512, MaxSeq: 128}
	for _, lora := range []bool{false, true} {
		b.Run(fmt.Sprintf("llama-L4-C256-B8-T128/lora=%v", lora), func(b *testing.B) {
			m, err := New(cpu.New(0), cfg, 1)
			if err != nil {
				b.Fatal(err)
			}
			if lora {
				if err := m.AttachLoRA(LoRA{Rank: 16, Alpha: 32, Targets: LoRAModules}, 1); err != nil {
					b.Fatal(err)
				}
			}
			batch := randBatch(rand.New(rand.NewPCG(1, 2)), 8, 128, cfg.Vocab)
			batch.Weights = nil
			for b.Loop() {
				if _, err := m.TrainStep(batch, DefaultOptim(1e-4)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(8*128)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
