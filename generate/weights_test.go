package generate

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/tokenizer"
)

// roundParams rounds every parameter of m to bfloat16 (nearest, ties to
// even), kept as float32.
func roundParams(m *model.Model) {
	p := cpu.Data(m.Params())
	for i, x := range p {
		b := math.Float32bits(x)
		b += 0x7fff + (b>>16)&1
		p[i] = math.Float32frombits(b &^ 0xffff)
	}
}

// TestBF16WeightsDecodeTheRoundedModel: decoding with weights bf16 gives,
// bit for bit, what float32 decoding gives on the model whose weights are
// already rounded to bfloat16 (rounding them again changes nothing), for
// both families, with shared prompts, stop strings and sampling at several
// temperatures; and 32 slots give what one slot gives.
func TestBF16WeightsDecodeTheRoundedModel(t *testing.T) {
	tok := tokenizer.NewBytes()
	for _, family := range []string{model.GPT2, model.Llama} {
		m := tinyModelDim(t, family, 64)
		roundParams(m)
		reqs := append(requests(tok, 1), requests(tok, 0.7)...)
		reqs = append(reqs, requests(tok, 0)...)
		for i := range reqs {
			reqs[i].Seed += uint64(i)
			if i%4 == 1 {
				reqs[i].Stop = []string{"a"}
			}
		}
		f32, err := (&Generator{Model: m, Tok: tok, Slots: 4}).Run(reqs)
		if err != nil {
			t.Fatal(err)
		}
		for _, slots := range []int{1, 32} {
			bf, err := (&Generator{Model: m, Tok: tok, Slots: slots, Weights: model.WeightBF16}).Run(reqs)
			if err != nil {
				t.Fatal(err)
			}
			for i := range reqs {
				if !reflect.DeepEqual(bf[i], f32[i]) {
					t.Fatalf("%s, %d slots, request %d: bf16 %+v, f32 %+v", family, slots, i, bf[i], f32[i])
				}
			}
		}
	}
}

// TestBF16WeightsStayClose: on a model whose weights are not rounded, the
// first token's log-probability under greedy decoding moves by little
// (each weight moves by at most 2^-9 of itself), and the model's own
// float32 weights are left as they were.
func TestBF16WeightsStayClose(t *testing.T) {
	tok := tokenizer.NewBytes()
	m := tinyModelDim(t, model.Llama, 64)
	before := append([]float32(nil), cpu.Data(m.Params())...)
	reqs := requests(tok, 0)
	f32, err := (&Generator{Model: m, Tok: tok}).Run(reqs)
	if err != nil {
		t.Fatal(err)
	}
	bf, err := (&Generator{Model: m, Tok: tok, Weights: model.WeightBF16}).Run(reqs)
	if err != nil {
		t.Fatal(err)
	}
	differ := false
	for i := range reqs {
		a, b := f32[i].LogProbs[0], bf[i].LogProbs[0]
		if f32[i].Tokens[0] != bf[i].Tokens[0] || math.Abs(float64(a-b)) > 0.05 {
			t.Errorf("request %d: first token %d (log-prob %v) in f32, %d (%v) in bf16", i, f32[i].Tokens[0], a, bf[i].Tokens[0], b)
		}
		differ = differ || a != b
	}
	if !differ {
		t.Error("bf16 gave the float32 log-probs exactly: were the weights rounded at all?")
	}
	if !reflect.DeepEqual(before, cpu.Data(m.Params())) {
		t.Error("decoding in bf16 changed the model's float32 weights")
	}
}

// plain hides the CPU backend's optional interfaces: a backend without
// bfloat16 weights.
type plain struct{ gpu.Backend }

// TestBF16WeightsRefusedWithoutTheBackend: asking a backend without
// gpu.BF16Freezer for bf16 fails with ErrWeightType before decoding, and an
// unknown weight type is refused by name.
func TestBF16WeightsRefusedWithoutTheBackend(t *testing.T) {
	tok := tokenizer.NewBytes()
	m, err := model.New(plain{cpu.New(1)}, model.Config{Family: model.Llama, Layers: 1, Dim: 32, Heads: 4, Vocab: 257, MaxSeq: 64}, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&Generator{Model: m, Tok: tok, Weights: model.WeightBF16}).Run(requests(tok, 1))
	if !errors.Is(err, model.ErrWeightType) {
		t.Errorf("bf16 on a backend without it: %v, want ErrWeightType", err)
	}
	if _, err := (&Generator{Model: m, Tok: tok}).Run(requests(tok, 1)); err != nil {
		t.Errorf("f32 on the same backend: %v", err)
	}
	_, err = (&Generator{Model: tinyModel(t, model.Llama), Tok: tok, Weights: "int8"}).Run(requests(tok, 1))
	if err == nil || errors.Is(err, model.ErrWeightType) {
		t.Errorf("weights int8: %v, want an unknown-type error", err)
	}
}

// TestBF16ComputeRoundsTheInputs: decoding with weights bf16-act rounds
// the matmuls' inputs as well as their weights (the first token's
// log-probabilities move from bf16's, by little), leaves the model's
// weights as they were, and is refused on a backend without it.
func TestBF16ComputeRoundsTheInputs(t *testing.T) {
	tok := tokenizer.NewBytes()
	m := tinyModelDim(t, model.Llama, 64)
	before := append([]float32(nil), cpu.Data(m.Params())...)
	reqs := requests(tok, 0)
	bf, err := (&Generator{Model: m, Tok: tok, Weights: model.WeightBF16}).Run(reqs)
	if err != nil {
		t.Fatal(err)
	}
	act, err := (&Generator{Model: m, Tok: tok, Weights: model.WeightBF16Compute}).Run(reqs)
	if err != nil {
		t.Fatal(err)
	}
	differ := false
	nearTie := float32(math.Log(0.4)) // two candidates near evenly split: either may win
	for i := range reqs {
		a, b := bf[i].LogProbs[0], act[i].LogProbs[0]
		switch {
		case bf[i].Tokens[0] != act[i].Tokens[0] && (a < nearTie || b < nearTie):
			t.Errorf("request %d: first token %d (log-prob %v) in bf16, %d (%v) in bf16-act, not at a near tie", i, bf[i].Tokens[0], a, act[i].Tokens[0], b)
		case bf[i].Tokens[0] == act[i].Tokens[0] && math.Abs(float64(a-b)) > 0.05:
			t.Errorf("request %d: first token's log-prob %v in bf16, %v in bf16-act", i, a, b)
		}
		differ = differ || a != b
	}
	if !differ {
		t.Error("bf16-act gave bf16's log-probs exactly: were the inputs rounded at all?")
	}
	if !reflect.DeepEqual(before, cpu.Data(m.Params())) {
		t.Error("decoding in bf16-act changed the model's float32 weights")
	}
	p, err := model.New(plain{cpu.New(1)}, model.Config{Family: model.Llama, Layers: 1, Dim: 32, Heads: 4, Vocab: 257, MaxSeq: 64}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&Generator{Model: p, Tok: tok, Weights: model.WeightBF16Compute}).Run(requests(tok, 1)); !errors.Is(err, model.ErrWeightType) {
		t.Errorf("bf16-act on a backend without it: %v, want ErrWeightType", err)
	}
}
