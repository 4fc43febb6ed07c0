package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/internal/narrow"
)

// bf16Pass is one Accumulate of two passes on a fresh model of cfg, with
// its matmuls in bfloat16 when bf16 is set: the summed gradient and the
// log-probs of a Forwards pass before it.
func bf16Pass(t *testing.T, be gpu.Backend, cfg Config, bf16 bool) (m *Model, grads, logp []float32) {
	t.Helper()
	m, err := New(be, cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	m.BF16Matmuls = bf16
	r := rand.New(rand.NewPCG(3, 4))
	batches := []Batch{randBatch(r, 2, 5, cfg.Vocab), randBatch(r, 1, 8, cfg.Vocab)}
	err = m.Forwards(1, func(_ int, p *Pass) error {
		b := batches[0]
		lp, _, err := p.ForwardAt(b.Inputs, b.Targets, b.B, b.T, 1, false)
		logp = lp
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	m.ZeroGrad()
	err = m.Accumulate(len(batches), func(j int, p *Pass) error {
		b := batches[j]
		if _, _, err := p.ForwardAt(b.Inputs, b.Targets, b.B, b.T, 0.7, false); err != nil {
			return err
		}
		d := make([]float32, len(b.Inputs))
		for k := range d {
			d[k] = -b.Weights[k] / float32(len(d))
		}
		return p.Backward(d)
	})
	if err != nil {
		t.Fatal(err)
	}
	grads = make([]float32, m.grads.Len())
	m.be.Download(grads, m.grads)
	return m, grads, logp
}

// relDiff is ||a - b|| / ||b||.
func relDiff(a, b []float32) float64 {
	var d, n float64
	for i := range b {
		d += (float64(a[i]) - float64(b[i])) * (float64(a[i]) - float64(b[i]))
		n += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(d / n)
}

var bf16TrainShapes = map[string]Config{
	"llama": {Family: Llama, Layers: 2, Dim: 32, Heads: 4, KVHeads: 2, Hidden: 48, Vocab: 19, MaxSeq: 8, QKVBias: true},
	"gpt2":  {Family: GPT2, Layers: 2, Dim: 32, Heads: 4, Hidden: 64, Vocab: 19, MaxSeq: 8},
}

// TestBF16MatmulsTrainNearFloat32: with BF16Matmuls the update's
// gradients and the scoring log-probs move off the float32 ones (the
// flag acts) by about bfloat16's precision (under 2% of the gradient's
// norm, 0.02 nats), the same bits on one thread as on two, and a step
// leaves float32 masters (most weights are not bfloat16 values).
func TestBF16MatmulsTrainNearFloat32(t *testing.T) {
	for name, cfg := range bf16TrainShapes {
		t.Run(name, func(t *testing.T) {
			_, g32, lp32 := bf16Pass(t, cpu.New(2), cfg, false)
			m, g16, lp16 := bf16Pass(t, cpu.New(2), cfg, true)
			_, g16one, lp16one := bf16Pass(t, cpu.New(1), cfg, true)
			if !bitsEqual(g16, g16one) || !bitsEqual(lp16, lp16one) {
				t.Fatal("bfloat16 training differs between one thread and two")
			}
			if bitsEqual(g16, g32) || bitsEqual(lp16, lp32) {
				t.Fatal("BF16Matmuls changed no gradient or log-prob bit: the matmuls did not round")
			}
			if d := relDiff(g16, g32); d > 0.01 {
				t.Errorf("gradients %.4f of their norm from float32's, want under 0.01", d)
			} else {
				t.Logf("gradients %.5f of their norm from float32's", d)
			}
			for i := range lp32 {
				if d := math.Abs(float64(lp16[i] - lp32[i])); d > 0.02 {
					t.Fatalf("log-prob %d: %v in bfloat16, %v in float32", i, lp16[i], lp32[i])
				}
			}
			b := randBatch(rand.New(rand.NewPCG(5, 6)), 2, 6, cfg.Vocab)
			var loss [2]float64
			for i, on := range []bool{false, true} {
				mm, err := New(cpu.New(2), cfg, 7)
				if err != nil {
					t.Fatal(err)
				}
				mm.BF16Matmuls = on
				if loss[i], err = mm.TrainStep(b, DefaultOptim(1e-3)); err != nil {
					t.Fatal(err)
				}
			}
			if loss[0] == loss[1] || math.Abs(loss[0]-loss[1]) > 0.01 {
				t.Errorf("TrainStep's loss %v in float32, %v in bfloat16: want near, not equal", loss[0], loss[1])
			}
			if _, err := m.Step(DefaultOptim(1e-3)); err != nil {
				t.Fatal(err)
			}
			p, err := m.CopyParams()
			if err != nil {
				t.Fatal(err)
			}
			bf := 0
			for _, v := range p {
				if narrow.FromBF16(narrow.BF16(v)) == v {
					bf++
				}
			}
			if bf > len(p)/4 {
				t.Errorf("%d of %d weights are bfloat16 values after a step: the masters were rounded", bf, len(p))
			}
		})
	}
}

// TestPlanWithBF16Matmuls: the plan of a bf16 update adds the weights'
// bfloat16 copy (2 bytes a parameter, once even when generation reads it
// too) and the widest matmul's rounded operands, by hand for Qwen2.5-0.5B
// at 4 x 1,024 with logits by 1,024 rows: the head's 1,024 x (151,936 +
// 896) values, 2 bytes each.
func TestPlanWithBF16Matmuls(t *testing.T) {
	c := Config{Family: Llama, Layers: 24, Dim: 896, Heads: 14, KVHeads: 2, Hidden: 4864, Vocab: 151936, MaxSeq: 1024}
	o := PlanOptions{MicroBatch: 4, Seq: 1024, Slots: 8, Capacity: 1024, Parts: 1, LogitRows: 1024}
	base := PlanBytes(c.Plan(o))
	o.BF16Matmuls = true
	rows := c.Plan(o)
	want := 2*int64(c.NumParams()) + 2*1024*(151936+896)
	if got := PlanBytes(rows) - base; got != want {
		t.Errorf("bf16 update adds %d bytes, want %d", got, want)
	}
	o.BF16Weights = true
	if got := PlanBytes(c.Plan(o)) - base; got != want {
		t.Errorf("bf16 update and bf16 generation add %d bytes, want %d (one copy)", got, want)
	}
}
