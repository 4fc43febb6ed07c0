package generate

import (
	"math"
	"reflect"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/gpu/cuda"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/tokenizer"
)

// TestBF16WeightsOnEmulatedCUDA: the CUDA backend's bfloat16 weights
// (round_bf16, gemm_bf16) on the emulated driver, with corl's GEMM kernel.
// On a model whose weights are already bfloat16 values, decoding with
// weights bf16 is float32 decoding bit for bit, greedy and sampled; on the
// same model unrounded, the device's rounding and kernels give the CPU
// backend's bf16 greedy tokens, with log-probabilities within float32
// noise of them; so do matmuls wholly in bfloat16 (bf16-act), with corl's
// kernel and through cublasGemmEx (the emulator's stand-in).
func TestBF16WeightsOnEmulatedCUDA(t *testing.T) {
	emu := cuda.Emulator(t, "..")
	be, err := cuda.Open(cuda.Options{Driver: emu, CUBLAS: "off"})
	if err != nil {
		t.Fatal(err)
	}
	tok := tokenizer.NewBytes()
	host := tinyModelDim(t, model.Llama, 64)
	onDevice := func(be *cuda.Backend, rounded bool) *model.Model {
		m, err := model.New(be, host.Cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		p := append([]float32(nil), cpu.Data(host.Params())...)
		if rounded {
			for i, x := range p {
				b := math.Float32bits(x)
				b += 0x7fff + (b>>16)&1
				p[i] = math.Float32frombits(b &^ 0xffff)
			}
		}
		be.Upload(m.Params(), p)
		return m
	}
	reqs := append(requests(tok, 0), requests(tok, 0.8)...)
	for i := range reqs {
		reqs[i].Seed += uint64(i)
	}
	m := onDevice(be, true)
	f32, err := (&Generator{Model: m, Tok: tok, Slots: 4}).Run(reqs)
	if err != nil {
		t.Fatal(err)
	}
	bf, err := (&Generator{Model: m, Tok: tok, Slots: 4, Weights: model.WeightBF16}).Run(reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		if !reflect.DeepEqual(bf[i], f32[i]) {
			t.Fatalf("rounded model, request %d: bf16 %+v, f32 %+v", i, bf[i], f32[i])
		}
	}
	greedy := requests(tok, 0)
	withBLAS, err := cuda.Open(cuda.Options{Driver: emu})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m   *model.Model
		w   model.WeightType
		tol float64
	}{
		{onDevice(be, false), model.WeightBF16, 1e-4},
		{onDevice(be, false), model.WeightBF16Compute, 1e-3},
		{onDevice(withBLAS, false), model.WeightBF16Compute, 1e-3}, // cublasGemmEx
	} {
		want, err := (&Generator{Model: host, Tok: tok, Weights: c.w}).Run(greedy)
		if err != nil {
			t.Fatal(err)
		}
		got, err := (&Generator{Model: c.m, Tok: tok, Weights: c.w}).Run(greedy)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i := range greedy {
			if !reflect.DeepEqual(got[i].Tokens, want[i].Tokens) {
				t.Fatalf("%s, request %d: CUDA tokens %v, CPU %v", c.w, i, got[i].Tokens, want[i].Tokens)
			}
			for j := range want[i].LogProbs {
				d := math.Abs(float64(got[i].LogProbs[j] - want[i].LogProbs[j]))
				if d > c.tol {
					t.Fatalf("%s, request %d token %d: log-prob %v on CUDA, %v on the CPU (diff %.2g)", c.w, i, j, got[i].LogProbs[j], want[i].LogProbs[j], d)
				}
				worst = max(worst, d)
			}
		}
		t.Logf("%s on %s: the CPU's greedy tokens, log-probs within %.2g", c.w, c.m.Backend().Name(), worst)
	}
}

// TestHalfKVOnEmulatedCUDA: a binary16 key/value cache on the CUDA
// backend (store_half, attention_forward_half, emulated) decodes the CPU
// backend's greedy tokens with a binary16 cache, log-probabilities within
// float32 noise of them, and not float32 decoding's exactly (the keys
// and values were rounded).
func TestHalfKVOnEmulatedCUDA(t *testing.T) {
	emu := cuda.Emulator(t, "..")
	be, err := cuda.Open(cuda.Options{Driver: emu, CUBLAS: "off"})
	if err != nil {
		t.Fatal(err)
	}
	tok := tokenizer.NewBytes()
	host := tinyModelDim(t, model.Llama, 64)
	m, err := model.New(be, host.Cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	be.Upload(m.Params(), cpu.Data(host.Params()))
	greedy := requests(tok, 0)
	want, err := (&Generator{Model: host, Tok: tok, Slots: 4, KV: model.KVHalf}).Run(greedy)
	if err != nil {
		t.Fatal(err)
	}
	got, err := (&Generator{Model: m, Tok: tok, Slots: 4, KV: model.KVHalf}).Run(greedy)
	if err != nil {
		t.Fatal(err)
	}
	f32, err := (&Generator{Model: m, Tok: tok, Slots: 4}).Run(greedy)
	if err != nil {
		t.Fatal(err)
	}
	worst, moved := 0.0, false
	for i := range greedy {
		if !reflect.DeepEqual(got[i].Tokens, want[i].Tokens) {
			t.Fatalf("request %d: CUDA f16-cache tokens %v, CPU %v", i, got[i].Tokens, want[i].Tokens)
		}
		for j := range want[i].LogProbs {
			d := math.Abs(float64(got[i].LogProbs[j] - want[i].LogProbs[j]))
			if d > 1e-4 {
				t.Fatalf("request %d token %d: log-prob %v on CUDA, %v on the CPU", i, j, got[i].LogProbs[j], want[i].LogProbs[j])
			}
			worst = max(worst, d)
			moved = moved || got[i].LogProbs[j] != f32[i].LogProbs[j]
		}
	}
	if !moved {
		t.Error("the binary16 cache gave float32 decoding's log-probs exactly: were the keys and values rounded?")
	}
	t.Logf("f16 cache on %s: the CPU's greedy tokens, log-probs within %.2g", be.Name(), worst)
}
