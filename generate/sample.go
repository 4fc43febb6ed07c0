// Package generate samples completions from a model: batched decoding over a
// KV cache with continuous batching (a finished sequence's slot takes the next
// prompt), temperature, top-k and top-p sampling, stop strings and EOS, one
// seed per request, and the log-probability of every sampled token, which the
// policy update needs.
package generate

import (
	"math"
	"math/rand/v2"
	"sort"
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
	lp    []float64
	order []int
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
		s.lp, s.order = make([]float64, V), make([]int, V)
	}
	lp := s.lp[:V]
	maxv := math.Inf(-1)
	for i, x := range logits {
		lp[i] = float64(x) / temp
		maxv = math.Max(maxv, lp[i])
	}
	var sum float64
	for _, v := range lp {
		sum += math.Exp(v - maxv)
	}
	lse := maxv + math.Log(sum)
	for i := range lp {
		lp[i] -= lse
	}
	if s.p.Temperature <= 0 {
		best := 0
		for i := range lp {
			if lp[i] > lp[best] {
				best = i
			}
		}
		return int32(best), float32(lp[best])
	}
	// Candidates by probability (ties by id, so the order is deterministic).
	order := s.order[:V]
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		if lp[order[a]] != lp[order[b]] {
			return lp[order[a]] > lp[order[b]]
		}
		return order[a] < order[b]
	})
	n := V
	if s.p.TopK > 0 && s.p.TopK < n {
		n = s.p.TopK
	}
	mass := 0.0
	for i := 0; i < n; i++ {
		mass += math.Exp(lp[order[i]])
	}
	if s.p.TopP > 0 && s.p.TopP < 1 {
		acc := 0.0
		for i := 0; i < n; i++ {
			acc += math.Exp(lp[order[i]])
			if acc/mass >= float64(s.p.TopP) {
				n, mass = i+1, acc
				break
			}
		}
	}
	u := s.rng.Float64() * mass
	acc := 0.0
	pick := order[n-1]
	for i := 0; i < n; i++ {
		acc += math.Exp(lp[order[i]])
		if u < acc {
			pick = order[i]
			break
		}
	}
	return int32(pick), float32(lp[pick])
}
