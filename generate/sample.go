package generate

import (
	"math"
	"math/rand/v2"

	"github.com/corl-project/corl/internal/fastexp"
)

// Params control sampling for one request.
type Params struct {
	MaxNewTokens int      `json:"max_new_tokens"`
	Temperature  float32  `json:"temperature"` // 0: greedy
	TopK         int      `json:"top_k"`       // 0: off
	TopP         float32  `json:"top_p"`       // 0 or 1: off
	Stop         []string `json:"stop,omitempty"`
	Seed         uint64   `json:"seed"`
}

// sampler draws tokens for one request from its own random stream, so a
// request's output depends on its seed alone, not on the batch around it.
type sampler struct {
	p   Params
	rng *rand.Rand
	// scratch
	lp, prob []float64
	order    []int32
	top      []int32
}

func newSampler(p Params) *sampler {
	return &sampler{p: p, rng: rand.New(rand.NewPCG(p.Seed, 0x9e3779b97f4a7c15))}
}

// next picks a token from logits (V) and returns it with its log-probability
// under the temperature-scaled distribution before top-k/top-p truncation
// (the distribution the policy gradient differentiates, as in TRL); greedy
// decoding reports the temperature-1 log-probability.
func (s *sampler) next(logits []float32) (int32, float32) {
	V := len(logits)
	temp := float64(s.p.Temperature)
	if temp <= 0 {
		temp = 1
	}
	if cap(s.lp) < V {
		s.lp, s.prob, s.order = make([]float64, V), make([]float64, V), make([]int32, V)
	}
	lp := s.lp[:V]
	maxv := math.Inf(-1)
	for i, x := range logits {
		lp[i] = float64(x) / temp
		if lp[i] > maxv { // math.Max's NaN and signed-zero cases cost a third of the loop
			maxv = lp[i]
		}
	}
	// prob holds exp(x - max) and, once summed, the probabilities: one exp
	// per token.
	prob := s.prob[:V]
	fastexp.ShiftedExp(prob, lp, maxv) // math.Exp's bits, eight at a time
	var sum float64
	for _, q := range prob {
		sum += q
	}
	lse := maxv + math.Log(sum)
	if s.p.Temperature <= 0 {
		best := 0
		for i := range lp {
			lp[i] -= lse
			if lp[i] > lp[best] {
				best = i
			}
		}
		return int32(best), float32(lp[best])
	}
	// One pass: log-probabilities, probabilities and their total.
	inv := 1 / sum
	mass := 0.0
	for i := range prob {
		lp[i] -= lse
		prob[i] *= inv
		mass += prob[i]
	}
	truncate := (s.p.TopK > 0 && s.p.TopK < V) || (s.p.TopP > 0 && s.p.TopP < 1)
	if !truncate {
		// The whole distribution: inverse CDF in id order, no ordering needed.
		u := s.rng.Float64() * mass
		acc := 0.0
		for i, q := range prob {
			acc += q
			if u < acc {
				return int32(i), float32(lp[i])
			}
		}
		return int32(V - 1), float32(lp[V-1])
	}
	// Candidates by probability (ties by id, so the order is deterministic),
	// taken from a heap one at a time until top-k or top-p stops: O(V) to
	// build and O(log V) a candidate, rather than sorting the vocabulary.
	h := candHeap{prob: prob, ids: s.order[:V]}
	for i := range h.ids {
		h.ids[i] = int32(i)
	}
	h.init()
	limit := V
	if s.p.TopK > 0 && s.p.TopK < V {
		limit = s.p.TopK
	}
	top := s.top[:0]
	mass = 0
	for len(top) < limit {
		id := h.pop()
		top = append(top, id)
		mass += prob[id]
		if s.p.TopP > 0 && s.p.TopP < 1 && mass >= float64(s.p.TopP) {
			break
		}
	}
	s.top = top
	u := s.rng.Float64() * mass
	acc := 0.0
	pick := top[len(top)-1]
	for _, id := range top {
		acc += prob[id]
		if u < acc {
			pick = id
			break
		}
	}
	return pick, float32(lp[pick])
}

// candHeap is a binary max-heap of token ids by (probability desc, id asc).
type candHeap struct {
	prob []float64
	ids  []int32
}

func (h *candHeap) before(a, b int32) bool {
	if h.prob[a] != h.prob[b] {
		return h.prob[a] > h.prob[b]
	}
	return a < b
}

func (h *candHeap) init() {
	for i := len(h.ids)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *candHeap) down(i int) {
	n := len(h.ids)
	for {
		best, l := i, 2*i+1
		if l < n && h.before(h.ids[l], h.ids[best]) {
			best = l
		}
		if r := l + 1; r < n && h.before(h.ids[r], h.ids[best]) {
			best = r
		}
		if best == i {
			return
		}
		h.ids[i], h.ids[best] = h.ids[best], h.ids[i]
		i = best
	}
}

// pop removes and returns the first candidate.
func (h *candHeap) pop() int32 {
	top := h.ids[0]
	last := len(h.ids) - 1
	h.ids[0] = h.ids[last]
	h.ids = h.ids[:last]
	h.down(0)
	return top
}
