package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/gpu/cpu"
)

// TestRecomputeGivesTheSameGradients: with Recompute, a training pass
// keeps one layer's activations, and its gradients, losses and weights
// after three steps are the same bits as with every layer's kept, on every
// tiny shape and on three-layer models (where a middle layer is
// recomputed), with attention in tiles and stored, on the model's own pass
// and through Accumulate's passes on threads.
func TestRecomputeGivesTheSameGradients(t *testing.T) {
	recomputeSameBits(t, func() gpu.Backend { return cpu.New(2) }, false)
}

// recomputeSameBits is TestRecomputeGivesTheSameGradients on the backends
// newBackend opens; unscaled: without the shapes of scaled rotary
// embeddings, which the backend lacks.
func recomputeSameBits(t *testing.T, newBackend func() gpu.Backend, unscaled bool) {
	cfgs := runnableConfigs(unscaled)
	cfgs["llama-3-layers"] = Config{Family: Llama, Layers: 3, Dim: 16, Heads: 4, KVHeads: 2, Hidden: 24, Vocab: 11, MaxSeq: 8}
	cfgs["gpt2-3-layers"] = Config{Family: GPT2, Layers: 3, Dim: 16, Heads: 2, Vocab: 11, MaxSeq: 8}
	defer func(v bool) { UntiledAttention = v }(UntiledAttention)
	for name, cfg := range cfgs {
		for _, untiled := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/untiled=%v", name, untiled), func(t *testing.T) {
				UntiledAttention = untiled
				var runs [2][]uint32
				var losses [2][]float64
				for i, recompute := range []bool{false, true} {
					m, err := New(newBackend(), cfg, 7)
					if err != nil {
						t.Fatal(err)
					}
					m.Recompute = recompute
					r := rand.New(rand.NewPCG(3, 4))
					for step := 0; step < 3; step++ {
						b := randBatch(r, 3, 6, cfg.Vocab)
						b.Temperature = 0.7
						loss, err := m.TrainStep(b, DefaultOptim(1e-2))
						if err != nil {
							t.Fatal(err)
						}
						losses[i] = append(losses[i], loss)
					}
					// Accumulate: two passes on threads, their gradients summed.
					m.ZeroGrad()
					batches := []Batch{randBatch(r, 2, 5, cfg.Vocab), randBatch(r, 1, 8, cfg.Vocab)}
					err = m.Accumulate(len(batches), func(j int, p *Pass) error {
						b := batches[j]
						if _, _, err := p.ForwardAt(b.Inputs, b.Targets, b.B, b.T, 1, false); err != nil {
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
					for _, src := range []gpu.Buffer{m.params, m.grads} {
						f := make([]float32, src.Len())
						m.be.Download(f, src)
						for _, v := range f {
							runs[i] = append(runs[i], math.Float32bits(v))
						}
					}
				}
				for s := range losses[0] {
					if math.Float64bits(losses[0][s]) != math.Float64bits(losses[1][s]) {
						t.Errorf("step %d: loss %v kept, %v recomputed", s+1, losses[0][s], losses[1][s])
					}
				}
				diff := 0
				for k := range runs[0] {
					if runs[0][k] != runs[1][k] {
						diff++
					}
				}
				if diff > 0 {
					t.Errorf("%d of %d weights and gradients differ in bits with recompute", diff, len(runs[0]))
				}
				kept, one := cfg.ActivationFloats(3, 6, !untiled, false, 0), cfg.ActivationFloats(3, 6, !untiled, true, 0)
				if cfg.Layers > 1 && one >= kept {
					t.Errorf("recompute keeps %d activation floats, every layer's %d", one, kept)
				}
			})
		}
	}
}

// TestLogitRowsKeepTheBits: with LogitRows, a pass computes its logits a
// block of tokens at a time (forward, and again in the backward). The
// log-probabilities and statistics are the same bits as with every row's
// logits kept, and so is every gradient but the output head's, whose sums
// over tokens add block by block (within float32 rounding of it); the
// pass keeps a block's logits; on every tiny shape, with blocks that do
// and do not divide the tokens, at a temperature.
func TestLogitRowsKeepTheBits(t *testing.T) {
	logitRowsKeepBits(t, func() gpu.Backend { return cpu.New(2) }, false)
}

func logitRowsKeepBits(t *testing.T, newBackend func() gpu.Backend, unscaled bool) {
	for name, cfg := range runnableConfigs(unscaled) {
		for _, rows := range []int{4, 7} {
			t.Run(fmt.Sprintf("%s/rows=%d", name, rows), func(t *testing.T) {
				var logps, stats [2][]float32
				var grads [2][]float32
				var head Tensor
				for i, lr := range []int{0, rows} {
					m, err := New(newBackend(), cfg, 5)
					if err != nil {
						t.Fatal(err)
					}
					m.LogitRows = lr
					head = m.lo.tensors[m.lo.lmHead]
					b := randBatch(rand.New(rand.NewPCG(8, 9)), 3, 7, cfg.Vocab)
					lp, st, err := m.ForwardAt(b.Inputs, b.Targets, b.B, b.T, 0.8, true)
					if err != nil {
						t.Fatal(err)
					}
					d := make([]float32, len(lp))
					for k := range d {
						d[k] = -b.Weights[k] / float32(len(d))
					}
					m.ZeroGrad()
					if err := m.Backward(d); err != nil {
						t.Fatal(err)
					}
					g := make([]float32, m.grads.Len())
					m.be.Download(g, m.grads)
					logps[i], stats[i], grads[i] = lp, st, g
					if lr > 0 {
						if got, want := m.own.acts.logits.Len(), rows*cfg.Vocab; got != want {
							t.Errorf("logits buffer of %d floats, want %d", got, want)
						}
					}
				}
				if !bitsEqual(logps[0], logps[1]) || !bitsEqual(stats[0], stats[1]) {
					t.Errorf("log-probabilities or statistics differ in bits")
				}
				var maxHead float64
				for k := range grads[0] {
					inHead := k >= head.Off && k < head.Off+head.Size()
					a, b := grads[0][k], grads[1][k]
					if !inHead && math.Float32bits(a) != math.Float32bits(b) {
						t.Fatalf("gradient %d outside the head: %v kept, %v by blocks", k, a, b)
					}
					if inHead {
						maxHead = max(maxHead, math.Abs(float64(a)))
					}
				}
				for k := head.Off; k < head.Off+head.Size(); k++ {
					if diff := math.Abs(float64(grads[0][k] - grads[1][k])); diff > 1e-6*maxHead+1e-9 {
						t.Errorf("head gradient %d: %v kept, %v by blocks", k, grads[0][k], grads[1][k])
						break
					}
				}
			})
		}
	}
}

// runnableConfigs is tinyConfigs, without the shapes of scaled rotary
// embeddings when unscaled (a backend without them).
func runnableConfigs(unscaled bool) map[string]Config {
	cfgs := tinyConfigs()
	for name, cfg := range cfgs {
		if unscaled && cfg.RopeScaling.Type != "" {
			delete(cfgs, name)
		}
	}
	return cfgs
}

func bitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
