package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
)

func tinyConfigs() map[string]Config {
	return map[string]Config{
		"gpt2":           {Family: GPT2, Layers: 2, Dim: 16, Heads: 2, Vocab: 11, MaxSeq: 8},
		"llama-gqa-bias": {Family: Llama, Layers: 2, Dim: 16, Heads: 4, KVHeads: 2, Hidden: 24, Vocab: 11, MaxSeq: 8, QKVBias: true},
		"llama-tied":     {Family: Llama, Layers: 1, Dim: 12, Heads: 3, KVHeads: 1, Vocab: 7, MaxSeq: 8, TiedEmbed: true},
		// head_dim other than hidden/heads, and Llama 3.1's rope scaling
		"llama-headdim-rope3": {Family: Llama, Layers: 1, Dim: 12, Heads: 2, KVHeads: 1, HeadDim: 8, Vocab: 9, MaxSeq: 8, RopeTheta: 500000,
			RopeScaling: RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 4}},
		"llama-rope-linear": {Family: Llama, Layers: 1, Dim: 16, Heads: 2, Vocab: 9, MaxSeq: 8, RopeScaling: RopeScaling{Type: "linear", Factor: 2}},
	}
}

func randBatch(r *rand.Rand, B, T, V int) Batch {
	b := Batch{B: B, T: T, Inputs: make([]int32, B*T), Targets: make([]int32, B*T), Weights: make([]float32, B*T)}
	for i := range b.Inputs {
		b.Inputs[i], b.Targets[i] = int32(r.IntN(V)), int32(r.IntN(V))
		b.Weights[i] = float32(r.IntN(3)) // zeros included: masked positions
	}
	b.Weights[0] = 1
	return b
}

// TestGradientMatchesFiniteDifference checks the whole backward pass: the
// directional derivative of the loss along a random direction, by central
// differences, against the dot product of that direction with the gradient.
func TestGradientMatchesFiniteDifference(t *testing.T) {
	for name, cfg := range tinyConfigs() {
		for _, temp := range []float32{1, 0.7} {
			t.Run(fmt.Sprintf("%s/T=%g", name, temp), func(t *testing.T) { gradientCheck(t, cfg, temp) })
		}
	}
}

// gradientCheck compares backward with central differences of the loss
// along a direction in every tensor, at a sampling temperature (the logits
// divided by it, as the RL update does).
func gradientCheck(t *testing.T, cfg Config, temp float32) {
	be := cpu.New(2)
	m, err := New(be, cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	// Large random weights, norms and biases, so that every path
	// (attention scores included) carries a measurable gradient.
	p := cpu.Data(m.params)
	for i := 0; i < m.lo.decayed; i++ {
		p[i] *= 15
	}
	for i := m.lo.decayed; i < len(p); i++ {
		p[i] += float32(r.NormFloat64() * 0.3)
	}
	b := randBatch(r, 2, 5, cfg.Vocab)
	b.Temperature = temp
	if _, _, err := m.Loss(b); err != nil {
		t.Fatal(err)
	}
	var sw float32
	for _, w := range b.Weights {
		sw += w
	}
	dlogp := make([]float32, len(b.Weights))
	for i, w := range b.Weights {
		dlogp[i] = -w / sw
	}
	m.ZeroGrad()
	if err := m.Backward(dlogp); err != nil {
		t.Fatal(err)
	}
	g := append([]float32(nil), cpu.Data(m.grads)...)
	orig := append([]float32(nil), p...)
	for _, tn := range m.Tensors() {
		// A unit direction inside this tensor, half along its gradient
		// (so the derivative is large enough to measure) and half random
		// (so a gradient with the wrong direction is caught too).
		gt := g[tn.Off : tn.Off+tn.Size()]
		dir := make([]float64, len(gt))
		var gn, rn float64
		rnd := make([]float64, len(gt))
		for i := range gt {
			gn += float64(gt[i]) * float64(gt[i])
			rnd[i] = r.NormFloat64()
			rn += rnd[i] * rnd[i]
		}
		gn, rn = math.Sqrt(gn), math.Sqrt(rn)
		var analytic float64
		for i := range dir {
			if gn > 0 {
				dir[i] = 0.5 * float64(gt[i]) / gn
			}
			dir[i] += 0.5 * rnd[i] / rn
			analytic += dir[i] * float64(gt[i])
		}
		// float32 forward: h = 1e-2 along a unit direction keeps the
		// truncation error (h^2) and the loss's rounding noise (~1e-6/h)
		// both below the 1% + 2e-4 tolerance.
		const h = 1e-2
		loss := func(s float64) float64 {
			copy(p, orig)
			for i := range dir {
				p[tn.Off+i] = float32(float64(orig[tn.Off+i]) + s*dir[i])
			}
			l, _, err := m.Loss(b)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		numeric := (loss(h) - loss(-h)) / (2 * h)
		copy(p, orig)
		if math.Abs(numeric-analytic) > 0.01*math.Abs(analytic)+2e-4 {
			t.Errorf("%s: directional derivative %.6g by finite differences, %.6g from backward", tn.Name, numeric, analytic)
		}
	}
}

// TestLossFallsOnFixedBatch trains each tiny family on one batch.
func TestLossFallsOnFixedBatch(t *testing.T) {
	for name, cfg := range tinyConfigs() {
		t.Run(name, func(t *testing.T) {
			m, err := New(cpu.New(0), cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			b := randBatch(rand.New(rand.NewPCG(1, 1)), 4, 8, cfg.Vocab)
			b.Weights = nil
			first, err := m.TrainStep(b, DefaultOptim(1e-2))
			if err != nil {
				t.Fatal(err)
			}
			var last float64
			for i := 0; i < 60; i++ {
				if last, err = m.TrainStep(b, DefaultOptim(1e-2)); err != nil {
					t.Fatal(err)
				}
			}
			if last > first/2 {
				t.Fatalf("loss went from %.4f to %.4f in 60 steps; want at least halved", first, last)
			}
		})
	}
}

// TestTrainingIsBitwiseDeterministic: same seed, same data -> identical weights
// after several steps, whatever the thread count.
func TestTrainingIsBitwiseDeterministic(t *testing.T) {
	for _, cfg := range []Config{
		{Family: Llama, Layers: 2, Dim: 64, Heads: 4, KVHeads: 2, Vocab: 97, MaxSeq: 32},
		{Family: GPT2, Layers: 2, Dim: 48, Heads: 3, Vocab: 97, MaxSeq: 32},
	} {
		t.Run(cfg.Family, func(t *testing.T) { checkDeterministic(t, cfg) })
	}
}

func checkDeterministic(t *testing.T, cfg Config) {
	train := func(threads int) []float32 {
		m, err := New(cpu.New(threads), cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(9, 9))
		for i := 0; i < 4; i++ {
			if _, err := m.TrainStep(randBatch(r, 3, 32, cfg.Vocab), DefaultOptim(1e-3)); err != nil {
				t.Fatal(err)
			}
		}
		return cpu.Data(m.params)
	}
	ref := train(1)
	for _, th := range []int{1, 2, 5} {
		got := train(th)
		for i := range ref {
			if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
				t.Fatalf("threads=%d: parameter %d = %v, 1 thread gave %v", th, i, got[i], ref[i])
			}
		}
	}
}

func TestGPT2SmallParameterCount(t *testing.T) {
	c := Config{Family: GPT2, Layers: 12, Dim: 768, Heads: 12, Vocab: 50257, MaxSeq: 1024}
	c, err := c.Normalized()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := newLayout(c).total, 124439808; got != want { // Hugging Face "gpt2"
		t.Fatalf("gpt2 124M config has %d parameters, want %d", got, want)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Family: "mamba", Layers: 1, Dim: 8, Heads: 2, Vocab: 5, MaxSeq: 4}, "family"},
		{Config{Family: GPT2, Layers: 0, Dim: 8, Heads: 2, Vocab: 5, MaxSeq: 4}, "num_hidden_layers"},
		{Config{Family: GPT2, Layers: 1, Dim: 9, Heads: 2, Vocab: 5, MaxSeq: 4}, "hidden_size"},
		{Config{Family: Llama, Layers: 1, Dim: 8, Heads: 4, KVHeads: 3, Vocab: 5, MaxSeq: 4}, "num_key_value_heads"},
		{Config{Family: Llama, Layers: 1, Dim: 12, Heads: 4, Vocab: 5, MaxSeq: 4}, "even"},
	} {
		_, err := tc.cfg.Normalized()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to mention %q", tc.cfg, err, tc.want)
		}
	}
}

func TestForwardRejectsBadTokens(t *testing.T) {
	m, err := New(cpu.New(1), tinyConfigs()["gpt2"], 1)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = m.Forward([]int32{1, 99}, []int32{1, 2}, 1, 2, false)
	if err == nil || !strings.Contains(err.Error(), "inputs[1]") {
		t.Fatalf("error %v, want one naming inputs[1]", err)
	}
	if _, _, err = m.Forward(make([]int32, 9), make([]int32, 9), 1, 9, false); err == nil {
		t.Fatal("a sequence longer than max_position_embeddings was accepted")
	}
}

func TestNonFiniteGradientLeavesWeights(t *testing.T) {
	m, err := New(cpu.New(1), tinyConfigs()["gpt2"], 1)
	if err != nil {
		t.Fatal(err)
	}
	before := append([]float32(nil), cpu.Data(m.params)...)
	cpu.Data(m.grads)[3] = float32(math.NaN())
	if _, err := m.Step(DefaultOptim(1e-2)); err == nil || !strings.Contains(err.Error(), "non-finite") {
		t.Fatalf("step error %v, want a non-finite gradient error", err)
	}
	for i, v := range cpu.Data(m.params) {
		if v != before[i] {
			t.Fatalf("parameter %d changed after a rejected step", i)
		}
	}
}

// TestNonFiniteWeightsAfterStepAreCaught: AdamW with epsilon 0 and a zero
// gradient divides 0 by 0 on its first step; the step fails naming the
// tensor instead of leaving NaN weights to be checkpointed.
func TestNonFiniteWeightsAfterStepAreCaught(t *testing.T) {
	m, err := New(cpu.New(1), tinyConfigs()["gpt2"], 1)
	if err != nil {
		t.Fatal(err)
	}
	m.ZeroGrad()
	o := DefaultOptim(1e-3)
	o.Eps = 0
	_, err = m.Step(o)
	if !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), "tensor ") {
		t.Fatalf("step error %v, want a non-finite weights error naming the tensor", err)
	}
}
