package rl

import (
	"fmt"
	"math"
)

// GRPO settings; names follow TRL's GRPOConfig.
type GRPO struct {
	ScaleRewards  string  `json:"scale_rewards" mapstructure:"scale_rewards"`   // group | batch | none
	LossType      string  `json:"loss_type" mapstructure:"loss_type"`           // token-mean | seq-mean-token-mean | seq-mean-token-sum-norm
	Epsilon       float64 `json:"epsilon" mapstructure:"epsilon"`               // lower clip
	EpsilonHigh   float64 `json:"epsilon_high" mapstructure:"epsilon_high"`     // upper clip (clip-higher); 0 means epsilon
	Beta          float64 `json:"beta" mapstructure:"beta"`                     // KL weight (k3 estimator); 0 disables the reference
	NumIterations int     `json:"num_iterations" mapstructure:"num_iterations"` // policy epochs per round
	// StepsPerGeneration: mini-batches of prompts per epoch, one optimizer
	// step each (0: one).
	StepsPerGeneration int `json:"steps_per_generation" mapstructure:"steps_per_generation"`
	MaxNewTokens       int `json:"-" mapstructure:"-"` // Dr. GRPO's constant normaliser
}

// Loss aggregation and reward scaling names.
const (
	TokenMean           = "token-mean"
	SeqMeanTokenMean    = "seq-mean-token-mean"
	SeqMeanTokenSumNorm = "seq-mean-token-sum-norm"
	ScaleGroup          = "group"
	ScaleBatch          = "batch"
	ScaleNone           = "none"
)

// Validate checks the settings, naming the field.
func (g GRPO) Validate() error {
	switch g.ScaleRewards {
	case ScaleGroup, ScaleBatch, ScaleNone:
	default:
		return fmt.Errorf("scale_rewards: %q is not one of group, batch, none", g.ScaleRewards)
	}
	switch g.LossType {
	case TokenMean, SeqMeanTokenMean, SeqMeanTokenSumNorm:
	default:
		return fmt.Errorf("loss_type: %q is not one of %s, %s, %s", g.LossType, TokenMean, SeqMeanTokenMean, SeqMeanTokenSumNorm)
	}
	if g.Epsilon <= 0 || g.Epsilon >= 1 {
		return fmt.Errorf("epsilon: %v must be in (0, 1)", g.Epsilon)
	}
	if g.EpsilonHigh < 0 {
		return fmt.Errorf("epsilon_high: %v must not be negative", g.EpsilonHigh)
	}
	if g.Beta < 0 {
		return fmt.Errorf("beta: %v must not be negative", g.Beta)
	}
	if g.NumIterations < 1 {
		return fmt.Errorf("num_iterations: %d must be at least 1", g.NumIterations)
	}
	if g.StepsPerGeneration < 0 {
		return fmt.Errorf("steps_per_generation: %d must be at least 1", g.StepsPerGeneration)
	}
	return nil
}

// Advantages turns rewards [prompt][sample] into group-relative advantages:
// r - mean(group), divided by std + 1e-4 of the group (group), of the whole
// batch (batch), or not at all (none). Standard deviations are unbiased, as
// in TRL.
func Advantages(rewards [][]float64, scale string) [][]float64 {
	adv := make([][]float64, len(rewards))
	var all []float64
	for _, g := range rewards {
		all = append(all, g...)
	}
	_, batchStd := meanStd(all)
	for p, g := range rewards {
		m, s := meanStd(g)
		adv[p] = make([]float64, len(g))
		for k, r := range g {
			a := r - m
			switch scale {
			case ScaleGroup:
				a /= s + 1e-4
			case ScaleBatch:
				a /= batchStd + 1e-4
			}
			adv[p][k] = a
		}
	}
	return adv
}

// meanStd returns the mean and the unbiased standard deviation.
func meanStd(x []float64) (float64, float64) {
	if len(x) == 0 {
		return 0, 0
	}
	var s float64
	for _, v := range x {
		s += v
	}
	m := s / float64(len(x))
	if len(x) < 2 {
		return m, 0
	}
	var ss float64
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return m, math.Sqrt(ss / float64(len(x)-1))
}

// Seq is one sequence's view for the loss: per completion token, the current,
// old (behaviour) and reference log-probabilities, and the advantage.
type Seq struct {
	LogP, OldLogP, RefLogP []float64 // RefLogP nil when beta == 0
	Adv                    float64
}

// LossStats summarises one loss evaluation.
type LossStats struct {
	Loss, KL, ClipFrac float64
	Tokens             int
}

// Loss evaluates the clipped GRPO objective over seqs and returns, per
// sequence and token, dLoss/dlogp (what model.Backward takes):
//
//	ratio_t  = exp(logp_t - old_t)
//	l_t      = -min(ratio_t*A, clip(ratio_t, 1-eps, 1+eps_high)*A) + beta*k3_t
//	k3_t     = exp(ref_t - logp_t) - (ref_t - logp_t) - 1
//
// aggregated as token-mean (sum / all tokens), seq-mean-token-mean (mean over
// sequences of each sequence's token mean) or seq-mean-token-sum-norm (sum /
// (sequences * MaxNewTokens), Dr. GRPO).
func (g GRPO) Loss(seqs []Seq) (LossStats, [][]float64, error) {
	total := 0
	for _, s := range seqs {
		total += len(s.LogP)
	}
	return g.LossPart(seqs, total, len(seqs))
}

// LossPart is Loss over part of a batch (a micro-batch) whose whole holds
// totalTokens completion tokens in totalSeqs sequences: the aggregation
// weights are the whole batch's, so the parts' gradients add up to the
// whole's exactly.
func (g GRPO) LossPart(seqs []Seq, totalTokens, totalSeqs int) (LossStats, [][]float64, error) {
	epsHigh := g.EpsilonHigh
	if epsHigh == 0 {
		epsHigh = g.Epsilon
	}
	total := totalTokens
	var st LossStats
	grads := make([][]float64, len(seqs))
	if total == 0 {
		return st, grads, nil
	}
	for i, s := range seqs {
		var w float64 // weight of each of this sequence's tokens in the aggregate
		switch g.LossType {
		case TokenMean:
			w = 1 / float64(total)
		case SeqMeanTokenMean:
			if len(s.LogP) > 0 {
				w = 1 / float64(totalSeqs*len(s.LogP))
			}
		case SeqMeanTokenSumNorm:
			if g.MaxNewTokens <= 0 {
				return st, nil, fmt.Errorf("loss %s needs max_new_tokens", g.LossType)
			}
			w = 1 / float64(totalSeqs*g.MaxNewTokens)
		default:
			return st, nil, fmt.Errorf("loss_type: %q unknown", g.LossType)
		}
		grads[i] = make([]float64, len(s.LogP))
		st.Tokens += len(s.LogP)
		for t, lp := range s.LogP {
			ratio := math.Exp(lp - s.OldLogP[t])
			clipped := math.Min(math.Max(ratio, 1-g.Epsilon), 1+epsHigh)
			l1, l2 := ratio*s.Adv, clipped*s.Adv
			lt, dt := -l1, -s.Adv*ratio
			if l2 < l1 { // the clipped term is the minimum: no gradient through it
				lt, dt = -l2, 0
				st.ClipFrac += 1 / float64(total)
			}
			if g.Beta > 0 {
				d := s.RefLogP[t] - lp
				k3 := math.Exp(d) - d - 1
				lt += g.Beta * k3
				dt += g.Beta * (1 - math.Exp(d))
				st.KL += k3 / float64(total)
			}
			st.Loss += w * lt
			grads[i][t] = w * dt
		}
	}
	if math.IsNaN(st.Loss) || math.IsInf(st.Loss, 0) {
		return st, nil, fmt.Errorf("GRPO loss is %v", st.Loss)
	}
	return st, grads, nil
}

// LRAt is the learning rate at optimizer step (1-based): linear warmup over
// warmup steps, then cosine decay to minRatio*peak at total steps.
func LRAt(peak float64, step, warmup, total int, minRatio float64) float64 {
	if warmup > 0 && step <= warmup {
		return peak * float64(step) / float64(warmup)
	}
	if total <= warmup {
		return peak
	}
	frac := math.Min(1, float64(step-warmup)/float64(total-warmup))
	return peak * (minRatio + (1-minRatio)*0.5*(1+math.Cos(math.Pi*frac)))
}
