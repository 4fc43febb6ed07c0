package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
)

// accumulateBatches are passes of different shapes, each with its loss
// weights: what an update's micro-batches look like.
func accumulateBatches(V int) []Batch {
	r := rand.New(rand.NewPCG(11, 12))
	var bs []Batch
	for i, shape := range [][2]int{{3, 5}, {1, 8}, {4, 2}, {2, 7}, {3, 3}, {1, 1}, {2, 6}} {
		b := randBatch(r, shape[0], shape[1], V)
		b.Temperature = []float32{1, 0.7}[i%2]
		bs = append(bs, b)
	}
	return bs
}

// dlogpOf is the loss derivative a pass backpropagates.
func dlogpOf(b Batch) []float32 {
	d := make([]float32, len(b.Weights))
	for i, w := range b.Weights {
		d[i] = -w / 7
	}
	return d
}

// TestAccumulateIsSumOfPassesInOrder: on any number of threads,
// Accumulate's gradient is bitwise the gradient already there plus each
// pass's own gradient (computed from zero), added in pass order; and the
// weights it froze are writable again after it.
func TestAccumulateIsSumOfPassesInOrder(t *testing.T) {
	for name, cfg := range tinyConfigs() {
		t.Run(name, func(t *testing.T) {
			ref, err := New(cpu.New(1), cfg, 3)
			if err != nil {
				t.Fatal(err)
			}
			bs := accumulateBatches(ref.Cfg.Vocab)
			// The reference: a gradient left from before (Accumulate adds
			// to it), then each pass alone, summed on the host in order.
			pass := func(b Batch) []float32 {
				ref.ZeroGrad()
				if _, _, err := ref.ForwardAt(b.Inputs, b.Targets, b.B, b.T, b.Temperature, false); err != nil {
					t.Fatal(err)
				}
				if err := ref.Backward(dlogpOf(b)); err != nil {
					t.Fatal(err)
				}
				return append([]float32(nil), cpu.Data(ref.grads)...)
			}
			want := pass(bs[0])
			for _, b := range bs[1:] {
				for i, g := range pass(b) {
					want[i] += g
				}
			}
			for _, threads := range []int{1, 2, 3, 8} {
				m, err := New(cpu.New(threads), cfg, 3)
				if err != nil {
					t.Fatal(err)
				}
				m.ZeroGrad()
				if _, _, err := m.ForwardAt(bs[0].Inputs, bs[0].Targets, bs[0].B, bs[0].T, bs[0].Temperature, false); err != nil {
					t.Fatal(err)
				}
				if err := m.Backward(dlogpOf(bs[0])); err != nil {
					t.Fatal(err)
				}
				err = m.Accumulate(len(bs)-1, func(i int, p *Pass) error {
					b := bs[i+1]
					if _, _, err := p.ForwardAt(b.Inputs, b.Targets, b.B, b.T, b.Temperature, false); err != nil {
						return err
					}
					return p.Backward(dlogpOf(b))
				})
				if err != nil {
					t.Fatal(err)
				}
				got := cpu.Data(m.grads)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%d threads: gradient %d (%s) = %v, want %v", threads, i, m.tensorAt(i), got[i], want[i])
					}
				}
				// The weights are not frozen any more: a step changes what
				// the next forward computes.
				before, _, err := m.Forward(bs[0].Inputs, bs[0].Targets, bs[0].B, bs[0].T, false)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := m.Step(DefaultOptim(1e-2)); err != nil {
					t.Fatal(err)
				}
				after, _, err := m.Forward(bs[0].Inputs, bs[0].Targets, bs[0].B, bs[0].T, false)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(before) == fmt.Sprint(after) {
					t.Fatalf("%d threads: a step after Accumulate left the forward unchanged", threads)
				}
			}
		})
	}
}

// TestAccumulateStopsAtAnError: a failing pass's error comes back, on
// one thread and on several, and passes after it do not all run.
func TestAccumulateStopsAtAnError(t *testing.T) {
	cfg := tinyConfigs()["gpt2"]
	boom := errors.New("boom")
	for _, threads := range []int{1, 3} {
		m, err := New(cpu.New(threads), cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		ran := make([]bool, 40)
		err = m.Accumulate(len(ran), func(i int, p *Pass) error {
			ran[i] = true
			if i == 4 {
				return fmt.Errorf("pass %d: %w", i, boom)
			}
			return nil
		})
		if !errors.Is(err, boom) || err.Error() != "pass 4: boom" {
			t.Fatalf("%d threads: got error %v, want pass 4's", threads, err)
		}
		if ran[len(ran)-1] {
			t.Fatalf("%d threads: the last pass ran after pass 4 failed", threads)
		}
	}
}

// tensorAt names the tensor holding parameter i.
func (m *Model) tensorAt(i int) string {
	for _, t := range m.lo.tensors {
		if i >= t.Off && i < t.Off+t.Size() {
			return t.Name
		}
	}
	return "?"
}

// TestForwardsMatchOneThread: passes run concurrently by Forwards give
// each batch's log-probabilities bitwise as one thread does, and leave the
// gradient alone.
func TestForwardsMatchOneThread(t *testing.T) {
	for name, cfg := range tinyConfigs() {
		t.Run(name, func(t *testing.T) {
			one, err := New(cpu.New(1), cfg, 3)
			if err != nil {
				t.Fatal(err)
			}
			bs := accumulateBatches(one.Cfg.Vocab)
			m, err := New(cpu.New(3), cfg, 3)
			if err != nil {
				t.Fatal(err)
			}
			m.ZeroGrad()
			got := make([][]float32, len(bs))
			err = m.Forwards(len(bs), func(i int, p *Pass) error {
				b := bs[i]
				lp, _, err := p.ForwardAt(b.Inputs, b.Targets, b.B, b.T, b.Temperature, false)
				got[i] = lp
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, b := range bs {
				want, _, err := one.ForwardAt(b.Inputs, b.Targets, b.B, b.T, b.Temperature, false)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got[i]) != fmt.Sprint(want) {
					t.Fatalf("batch %d: log-probs %v, one thread %v", i, got[i], want)
				}
			}
			for i, g := range cpu.Data(m.grads) {
				if g != 0 {
					t.Fatalf("gradient %d = %v after forward-only passes", i, g)
				}
			}
		})
	}
}
