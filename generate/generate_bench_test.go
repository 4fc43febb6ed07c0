package generate

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/tokenizer"
)

// BenchmarkGenerate: small config (gpt2, 4 layers, dim 128), batch 64,
// 128-token prompts, 32 new tokens, with and without the KV cache.
func BenchmarkGenerate(b *testing.B) {
	m, err := model.New(cpu.New(0), model.Config{Family: model.GPT2, Layers: 4, Dim: 128, Heads: 4, Vocab: 257, MaxSeq: 256}, 1)
	if err != nil {
		b.Fatal(err)
	}
	tok := tokenizer.NewBytes()
	reqs := make([]Request, 64)
	for i := range reqs {
		p := make([]int32, 128)
		for j := range p {
			p[j] = int32('a' + (i+j)%26)
		}
		reqs[i] = Request{Prompt: p, Params: Params{MaxNewTokens: 32, Temperature: 1, Seed: uint64(i)}}
	}
	g := &Generator{Model: m, Tok: tok, Slots: 64}
	for _, tc := range []struct {
		name string
		run  func([]Request) ([]Output, error)
	}{{"kv-cache", g.Run}, {"recompute", g.RunWithoutCache}} {
		b.Run(tc.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				outs, err := tc.run(reqs)
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range outs {
					n += len(o.Tokens)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkSampleLargeVocab: one token from a Qwen-sized vocabulary
// (151,936 logits, peaked like a trained model's), whole distribution and
// top-p 0.95 / top-k 50.
func BenchmarkSampleLargeVocab(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 151936)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	for _, p := range []Params{{Temperature: 1}, {Temperature: 1, TopP: 0.95}, {Temperature: 1, TopK: 50}} {
		b.Run(fmt.Sprintf("topk%d-topp%g", p.TopK, p.TopP), func(b *testing.B) {
			s := newSampler(p)
			for b.Loop() {
				s.next(logits)
			}
		})
	}
}
