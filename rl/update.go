package rl

import (
	"fmt"
	"math"
	"time"

	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/record"
)

// seqBatch is a padded (B, T) block of prompt+completion sequences: position
// t predicts token t+1; completion positions are [start, end) per row.
type seqBatch struct {
	b          model.Batch
	start, end []int
}

func buildBatch(cs []*Completion, pad int32) seqBatch {
	T := 0
	for _, c := range cs {
		T = max(T, positions(c))
	}
	sb := seqBatch{b: model.Batch{B: len(cs), T: T, Inputs: make([]int32, len(cs)*T), Targets: make([]int32, len(cs)*T)},
		start: make([]int, len(cs)), end: make([]int, len(cs))}
	for i, c := range cs {
		seq := append(append([]int32(nil), c.Prompt...), c.Tokens...)
		for t := 0; t < T; t++ {
			in, tg := pad, pad
			if t+1 < len(seq) {
				in, tg = seq[t], seq[t+1]
			}
			sb.b.Inputs[i*T+t], sb.b.Targets[i*T+t] = in, tg
		}
		sb.start[i], sb.end[i] = len(c.Prompt)-1, len(seq)-1
	}
	return sb
}

// microBatches cuts cs, in order, into the passes a forward or backward
// runs on: whole completions, at most micro of them and, past the first,
// no more than passTokens padded positions. Small passes are what lets a
// CPU's threads each take whole passes (Model.Accumulate) and keep a large
// vocabulary's logits bounded; the cut depends on the completions alone,
// never on the thread count, so neither do the results.
func microBatches(cs []*Completion, micro int) [][2]int {
	var out [][2]int
	for lo := 0; lo < len(cs); {
		hi, T := lo, 0
		for hi < len(cs) && hi-lo < max(micro, 1) {
			t := max(T, positions(cs[hi]))
			if hi > lo && (hi-lo+1)*t > passTokens {
				break
			}
			T, hi = t, hi+1
		}
		out = append(out, [2]int{lo, hi})
		lo = hi
	}
	return out
}

// positions is the completion's length in a batch: prompt and completion
// less the last token, which is only a target.
func positions(c *Completion) int { return len(c.Prompt) + len(c.Tokens) - 1 }

// completionStats runs m over completions and returns, per completion, the
// log-probability of each completion token and (with stats) the mean
// KL(uniform || p_t) and mean entropy over those tokens, all under the
// temperature the completions were sampled at.
func completionStats(m *model.Model, cs []*Completion, pad int32, micro int, temp float32, withStats bool) (logp [][]float64, selfCert, entropy []float64, err error) {
	logp = make([][]float64, len(cs))
	selfCert, entropy = make([]float64, len(cs)), make([]float64, len(cs))
	// Micro-batches on the model's threads, several at once when it
	// splits; each writes only its own completions' entries.
	passes := microBatches(cs, micro)
	err = m.Forwards(len(passes), func(j int, p *model.Pass) error {
		lo := passes[j][0]
		part := cs[lo:passes[j][1]]
		sb := buildBatch(part, pad)
		lp, st, err := p.ForwardAt(sb.b.Inputs, sb.b.Targets, sb.b.B, sb.b.T, temp, withStats)
		if err != nil {
			return err
		}
		for i := range part {
			row := make([]float64, 0, sb.end[i]-sb.start[i])
			for t := sb.start[i]; t < sb.end[i]; t++ {
				row = append(row, float64(lp[i*sb.b.T+t]))
				if withStats {
					entropy[lo+i] += float64(st[2*(i*sb.b.T+t)])
					selfCert[lo+i] += float64(st[2*(i*sb.b.T+t)+1])
				}
			}
			if n := float64(len(row)); n > 0 && withStats {
				entropy[lo+i] /= n
				selfCert[lo+i] /= n
			}
			logp[lo+i] = row
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return logp, selfCert, entropy, nil
}

// JudgeScores has the judge model score each completion's answer for the
// judge's view of the prompt: exp of the mean log-probability of the tokens of
// " The answer is <answer>." after the prompt, i.e. the geometric-mean
// probability the judge gives that statement (0 when the completion has no
// answer). Scores are cached per (prompt, answer).
func JudgeScores(judge *Member, prompts []Prompt, ro Rollout, micro int) (_ [][]float64, flops float64, err error) {
	type key struct {
		p int
		a string
	}
	index := map[key]int{}
	var cs []*Completion
	for p, row := range ro {
		for _, c := range row {
			k := key{p, c.Answer}
			if _, ok := index[k]; ok || c.Answer == "" {
				continue
			}
			prompt, err := judge.Tok.Encode(evaluate.PromptText(prompts[p].view(judge.View)))
			if err != nil {
				return nil, 0, err
			}
			stmt, err := judge.Tok.Encode(" The answer is " + c.Answer + ".")
			if err != nil {
				return nil, 0, err
			}
			index[k] = len(cs)
			cs = append(cs, &Completion{Prompt: prompt, Tokens: stmt})
		}
	}
	scores := make([][]float64, len(ro))
	for p := range scores {
		scores[p] = make([]float64, len(ro[p]))
	}
	if len(cs) == 0 {
		return scores, 0, nil
	}
	// The judge's own probability of the statement: temperature 1.
	lp, _, _, err := completionStats(judge.Model, cs, judge.Tok.EOS(), micro, 1, false)
	if err != nil {
		return nil, 0, fmt.Errorf("judge %s: %w", judge.Name, err)
	}
	for p, row := range ro {
		for k, c := range row {
			if i, ok := index[key{p, c.Answer}]; ok {
				var s float64
				for _, v := range lp[i] {
					s += v
				}
				scores[p][k] = math.Exp(s / float64(len(lp[i])))
			}
		}
	}
	return scores, ForwardFLOPs(judge.Model, cs), nil
}

// UpdateStats reports one member's policy update (its type lives with
// the records).
type UpdateStats = record.UpdateStats

// SamplingTemp is the temperature completions were drawn at (greedy: 1).
func SamplingTemp(c Config) float32 {
	if c.Temperature > 0 {
		return c.Temperature
	}
	return 1
}

// Update applies NumIterations clipped policy-gradient steps to member m for
// its rollout and advantages [prompt][sample]. step is the number of optimizer
// steps taken before this round (for the learning-rate schedule).
//
// The loss is TRL's: its denominators count every completion of the round,
// with signal or without (token-mean: all completion tokens;
// seq-mean-token-mean: all sequences; Dr. GRPO: sequences x
// max_completion_length). A sample with zero advantage and beta 0 adds
// nothing to the loss or the gradient, so its forward and backward are
// skipped, but it still counts; and every epoch takes an optimizer step, a
// zero-gradient one included (AdamW's moments and weight decay still move
// the weights, as in TRL).
func Update(m *Member, ro Rollout, adv [][]float64, c Config, step int) (UpdateStats, error) {
	var st UpdateStats
	if m.Frozen {
		return st, nil // no step, no tokens trained on, no FLOPs
	}
	u := prepareUpdate(ro, adv, c)
	m.Model.Recompute, m.Model.LogitRows, m.Model.BF16Matmuls = c.Recompute, c.LogitRows, c.BF16Matmuls
	t0 := time.Now()
	if err := u.recompute(m, c, &st); err != nil {
		return st, err
	}
	st.RecomputeSeconds = time.Since(t0).Seconds()
	for epoch := 0; epoch < c.GRPO.NumIterations; epoch++ {
		var ls LossStats
		var norm, lr float64
		for _, mb := range u.batches {
			parts, err := u.gradients(m, c, mb)
			if err != nil {
				return st, err
			}
			nb := float64(len(u.batches))
			for _, part := range parts {
				ls.Loss += part.Loss / nb
				ls.KL += part.KL / nb
				ls.ClipFrac += part.ClipFrac / nb
			}
			lr = LRAt(c.LearningRate, step+st.Steps+1, c.WarmupSteps, c.TotalSteps, c.MinLRRatio)
			o := c.Optim
			o.LR = float32(lr)
			n, err := m.Model.Step(o)
			if err != nil {
				return st, fmt.Errorf("%s: update: %w", m.Name, err)
			}
			norm = max(norm, n)
			st.Steps++
		}
		st.Loss, st.KL, st.ClipFrac, st.GradNorm, st.LR = ls.Loss, ls.KL, ls.ClipFrac, norm, lr
		st.Tokens += u.computed
	}
	return st, nil
}

// miniBatch is one optimizer step's completions: whole prompt groups.
type miniBatch struct {
	cs                     []*Completion
	advs                   []float64
	first                  int // index of cs[0] among all computed completions
	totalTokens, totalSeqs int // the loss's denominators: every completion of the groups
}

// update is a prepared policy update: its mini-batches, the completions
// that carry a gradient, and (after recompute) the sampling and reference
// policies' log-probs of them.
type update struct {
	batches  []miniBatch
	all      []*Completion
	computed int // tokens trained on per epoch
	old, ref [][]float64
}

// prepareUpdate splits the rollout into StepsPerGeneration mini-batches of
// whole prompt groups, leaving out completions that carry no gradient (no
// tokens, or zero advantage without a KL term).
func prepareUpdate(ro Rollout, adv [][]float64, c Config) *update {
	nb := min(max(c.GRPO.StepsPerGeneration, 1), max(len(ro), 1))
	u := &update{batches: make([]miniBatch, nb)}
	for b := range u.batches {
		mb := &u.batches[b]
		mb.first = len(u.all)
		for p := b * len(ro) / nb; p < (b+1)*len(ro)/nb; p++ {
			for k := range ro[p] {
				n := len(ro[p][k].Tokens)
				mb.totalTokens += n
				mb.totalSeqs++
				if n == 0 || (adv[p][k] == 0 && c.GRPO.Beta == 0) {
					continue
				}
				mb.cs = append(mb.cs, &ro[p][k])
				mb.advs = append(mb.advs, adv[p][k])
				u.computed += n
			}
		}
		u.all = append(u.all, mb.cs...)
	}
	return u
}

// recompute scores the completions under the policy before any step when
// it moves between steps (ratios need the sampling policy's log-probs; how
// far they are from those recorded at sampling goes in st), and under the
// reference model with a KL term.
func (u *update) recompute(m *Member, c Config, st *UpdateStats) error {
	micro, pad, temp := max(c.MicroBatch, 1), m.Tok.EOS(), SamplingTemp(c)
	if (c.GRPO.NumIterations > 1 || len(u.batches) > 1) && len(u.all) > 0 {
		var err error
		if u.old, _, _, err = completionStats(m.Model, u.all, pad, micro, temp, false); err != nil {
			return err
		}
		var diff float64
		n := 0
		for i, cp := range u.all {
			if len(cp.SampleLogP) < len(u.old[i]) {
				continue // no sampling log-probs recorded (a hand-made rollout)
			}
			for t, v := range u.old[i] {
				diff += math.Abs(v - float64(cp.SampleLogP[t]))
			}
			n += len(u.old[i])
		}
		if n > 0 {
			st.LogPMismatch = diff / float64(n)
		}
	}
	if c.GRPO.Beta > 0 && len(u.all) > 0 {
		if m.Ref == nil {
			return fmt.Errorf("%s: beta %v needs a reference model", m.Name, c.GRPO.Beta)
		}
		var err error
		if u.ref, _, _, err = completionStats(m.Ref, u.all, pad, micro, temp, false); err != nil {
			return err
		}
	}
	return nil
}

// gradients accumulates the mini-batch's loss gradient in the model and
// returns each micro-batch's loss statistics. Micro-batches run on the model's threads,
// several at once when it splits; their gradients add up in order, so the
// sum does not depend on how they ran.
func (u *update) gradients(m *Member, c Config, mb miniBatch) ([]LossStats, error) {
	micro, pad, temp := max(c.MicroBatch, 1), m.Tok.EOS(), SamplingTemp(c)
	g := c.GRPO
	g.MaxNewTokens = c.MaxNewTokens
	m.Model.ZeroGrad()
	passes := microBatches(mb.cs, micro)
	parts := make([]LossStats, len(passes))
	err := m.Model.Accumulate(len(parts), func(j int, p *model.Pass) error {
		lo, hi := passes[j][0], passes[j][1]
		sb := buildBatch(mb.cs[lo:hi], pad)
		lp, _, err := p.ForwardAt(sb.b.Inputs, sb.b.Targets, sb.b.B, sb.b.T, temp, false)
		if err != nil {
			return err
		}
		seqs := make([]Seq, hi-lo)
		for i := range seqs {
			row := make([]float64, 0, sb.end[i]-sb.start[i])
			for t := sb.start[i]; t < sb.end[i]; t++ {
				row = append(row, float64(lp[i*sb.b.T+t]))
			}
			seqs[i] = Seq{LogP: row, OldLogP: row, Adv: mb.advs[lo+i]}
			if u.old != nil {
				seqs[i].OldLogP = u.old[mb.first+lo+i]
			}
			if u.ref != nil {
				seqs[i].RefLogP = u.ref[mb.first+lo+i]
			}
		}
		part, grads, err := g.LossPart(seqs, mb.totalTokens, mb.totalSeqs)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		parts[j] = part
		dlogp := make([]float32, sb.b.B*sb.b.T)
		for i := range seqs {
			for t := range grads[i] {
				dlogp[i*sb.b.T+sb.start[i]+t] = float32(grads[i][t])
			}
		}
		return p.Backward(dlogp)
	})
	return parts, err
}

// SelfSignals fills each sample's self-certainty and negative entropy, the
// member's own per-token statistics over its completion.
func SelfSignals(m *Member, ro Rollout, groups []Group, micro int, temp float32) (flops float64, err error) {
	var cs []*Completion
	for p := range ro {
		for k := range ro[p] {
			cs = append(cs, &ro[p][k])
		}
	}
	_, sc, ent, err := completionStats(m.Model, cs, m.Tok.EOS(), max(micro, 1), temp, true)
	if err != nil {
		return 0, err
	}
	n := 0
	for p := range groups {
		for k := range groups[p] {
			groups[p][k].SelfCertainty, groups[p][k].NegEntropy = sc[n], -ent[n]
			n++
		}
	}
	return ForwardFLOPs(m.Model, cs), nil
}

// ForwardFLOPs is the cost of one forward pass over each completion, its
// prompt included (scoring: self-certainty, entropy, a judge's reading).
func ForwardFLOPs(m *model.Model, cs []*Completion) float64 {
	var flops float64
	for _, c := range cs {
		flops += m.ForwardFLOPs(len(c.Prompt) + len(c.Tokens))
	}
	return flops
}
