package model

import (
	"sync"

	"github.com/corl-project/corl/gpu"
)

// Pass is one forward and backward: the backend it runs on, the
// activations its forward saves for its backward, and the gradient buffer
// its backward accumulates into. The model's own pass (Model.ForwardAt,
// Model.Backward) runs on the model's backend into its gradients;
// Accumulate hands out others.
type Pass struct {
	m       *Model
	be      gpu.Backend
	grads   gpu.Buffer
	acts    *activations // sized for the last (B, T)
	loraBuf loraScratch  // the adapters' scratch (LoRA)
	arena   gpu.Buffer   // the memory behind acts, kept across batches
}

// Accumulate runs fn(i, p) for i in [0, n), each a forward and backward on
// a pass p whose gradient starts at zero, and adds pass i's gradient to the
// model's after pass i-1's. The sum is the same bits however the passes
// ran: one after another on the model's backend, or concurrently, each on
// one thread with its own activations and gradient, when the backend
// splits (gpu.Splitter). A small model's update issues operations too
// short for threads to share; whole micro-batches per thread keep them
// busy. The weights are frozen (gpu.WeightFreezer) while the passes run:
// fn must not step the optimizer. A failing pass stops the passes not yet
// started; the error of the earliest failing pass is returned.
func (m *Model) Accumulate(n int, fn func(i int, p *Pass) error) error {
	return m.runPasses(n, fn, true)
}

// Forwards runs fn(i, p) for i in [0, n) as Accumulate does, for passes
// that only run forward (log-probabilities to score or compare): nothing
// is added to the model's gradient, and fn must not call Backward.
func (m *Model) Forwards(n int, fn func(i int, p *Pass) error) error {
	return m.runPasses(n, fn, false)
}

// runPasses is Accumulate, adding each pass's gradient when sum is set.
func (m *Model) runPasses(n int, fn func(i int, p *Pass) error, sum bool) error {
	if n <= 0 {
		return nil
	}
	if release, ok := m.freezeBF16(); ok {
		defer release()
	} else if f, ok := m.be.(gpu.WeightFreezer); ok {
		defer f.FreezeWeights(m.params)()
	}
	passes := m.accumulateParts(n)
	var (
		mu   sync.Mutex
		turn sync.Cond // signalled when next advances or a pass fails
		next int       // the pass whose gradient is added next
		err  error
	)
	turn.L = &mu
	run := func(w int, p *Pass) {
		for i := w; i < n; i += len(passes) {
			mu.Lock()
			failed := err != nil
			mu.Unlock()
			if failed {
				return
			}
			if sum {
				if p.grads == nil { // forward-only passes need none
					p.grads = m.be.Alloc(m.gradLen())
				}
				p.be.Zero(p.grads)
			}
			e := fn(i, p)
			mu.Lock()
			for next != i && err == nil {
				turn.Wait()
			}
			if err == nil && e != nil {
				err = e
			}
			if err != nil {
				turn.Broadcast()
				mu.Unlock()
				return
			}
			mu.Unlock()
			if sum { // only pass i's worker touches the model's gradient now
				p.be.Add(m.grads, m.grads, p.grads, m.gradLen())
			}
			mu.Lock()
			next++
			turn.Broadcast()
			mu.Unlock()
		}
	}
	onParts(passes, run)
	if err != nil {
		return err
	}
	return m.be.Sync()
}

// accumulateParts are the passes Accumulate runs n passes on: one per
// thread of a splitting backend, as many as fit partsMemory beside the
// model (a pass holds a gradient and a micro-batch's activations), else
// the model's backend alone. Their buffers are kept for the next call.
func (m *Model) accumulateParts(n int) []*Pass {
	sp, ok := m.be.(gpu.Splitter)
	// A pass's activations: the largest arena a pass has needed so far,
	// or until there is one, three times the parameters.
	acts := 3 * m.lo.total
	if known := m.arenaFloats(); known > 0 {
		acts = known
	}
	k := min(m.be.Threads(), n, partsMemory/(4*(m.lo.total+acts)))
	if !ok || k < 2 {
		return []*Pass{&m.scratch}
	}
	bes := sp.Split(k)
	for len(m.parts) < k {
		m.parts = append(m.parts, &Pass{m: m})
	}
	for i, be := range bes {
		m.parts[i].be = be
	}
	return m.parts[:k]
}

// arenaFloats is the largest activation arena of the model's passes.
func (m *Model) arenaFloats() int {
	n := 0
	for _, p := range append([]*Pass{&m.own, &m.scratch}, m.parts...) {
		if p.arena != nil {
			n = max(n, p.arena.Len())
		}
	}
	return n
}

// partsMemory bounds the bytes of Accumulate's one-thread passes.
const partsMemory = 2 << 30

// freezeBF16 freezes the weights for bfloat16 compute when BF16Matmuls
// asks for it and the backend has it (the training passes' matmuls then
// run in bfloat16); ok is false, and nothing is frozen, otherwise.
func (m *Model) freezeBF16() (release func(), ok bool) {
	f, has := m.be.(gpu.BF16Compute)
	if !has || !m.BF16Matmuls {
		return nil, false
	}
	return f.FreezeWeightsBF16Compute(m.params), true
}
