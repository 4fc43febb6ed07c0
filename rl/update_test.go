package rl

import (
	"math"
	"slices"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/tokenizer"
)

// tinyMember is an untrained llama on bytes; same seed, same weights.
func tinyMember(t *testing.T, seed uint64) *Member {
	t.Helper()
	tok := tokenizer.NewBytes()
	m, err := model.New(cpu.New(1), model.Config{Family: model.Llama, Layers: 1, Dim: 32, Heads: 2, KVHeads: 1,
		Vocab: tok.VocabSize(), MaxSeq: 48}, seed)
	if err != nil {
		t.Fatal(err)
	}
	return &Member{Name: "tiny", Model: m, Tok: tok}
}

// handRollout is two prompts x two samples of different lengths; the second
// prompt's group has no signal (both advantages zero).
func handRollout(t *testing.T, tok tokenizer.Tokenizer) (Rollout, [][]float64) {
	t.Helper()
	enc := func(s string) []int32 {
		ids, err := tok.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	c := func(prompt, completion string) Completion {
		return Completion{Prompt: enc(prompt), Tokens: enc(completion)}
	}
	ro := Rollout{
		{c("Q: 1+2\nA:", " 3."), c("Q: 1+2\nA:", " The answer is 4.")},
		{c("Q: 5+0\nA:", " 5"), c("Q: 5+0\nA:", " five")},
	}
	return ro, [][]float64{{1, -1}, {0, 0}}
}

func updateConfig(loss string, beta float64) Config {
	c := Config{NumGenerations: 2, Temperature: 1, MaxNewTokens: 20, LearningRate: 1e-3, TotalSteps: 10, MinLRRatio: 1,
		GRPO:  GRPO{ScaleRewards: ScaleGroup, LossType: loss, Epsilon: 0.2, Beta: beta, NumIterations: 1},
		Optim: model.DefaultOptim(0), MicroBatch: 3}
	return c
}

// TestUpdateLossHasTRLDenominators: on the first iteration ratio = 1, so
// TRL's per-token loss is -A (beta 0, or a reference equal to the policy),
// and its aggregations divide by every completion of the batch, zero
// advantage or not:
//
//	grpo (seq-mean-token-mean): mean over all 4 sequences of each sequence's -A  = -(1 - 1 + 0 + 0)/4
//	bnpo/dapo (token-mean):     -sum_i A_i len_i / (all completion tokens)
//	dr_grpo (sum-norm):         -sum_i A_i len_i / (4 * max_completion_length)
//
// Dropping the zero-advantage group from the counts (or keeping it only
// when beta > 0) changes these numbers.
func TestUpdateLossHasTRLDenominators(t *testing.T) {
	tok := tokenizer.NewBytes()
	ro, adv := handRollout(t, tok)
	var signed, all float64
	for p := range ro {
		for k := range ro[p] {
			signed += adv[p][k] * float64(len(ro[p][k].Tokens))
			all += float64(len(ro[p][k].Tokens))
		}
	}
	want := map[string]float64{
		SeqMeanTokenMean:    0, // (-1 + 1 + 0 + 0) / 4
		TokenMean:           -signed / all,
		SeqMeanTokenSumNorm: -signed / (4 * 20),
	}
	if want[TokenMean] == 0 {
		t.Fatal("test rollout has equal lengths: token-mean would not tell the denominators apart")
	}
	for _, loss := range []string{SeqMeanTokenMean, TokenMean, SeqMeanTokenSumNorm} {
		for _, beta := range []float64{0, 0.04} {
			m := tinyMember(t, 3)
			if beta > 0 {
				m.Ref = tinyMember(t, 3).Model // equal to the policy: k3 = 0
			}
			st, err := Update(m, ro, adv, updateConfig(loss, beta), 0)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(st.Loss-want[loss]) > 1e-9 {
				t.Errorf("%s, beta %v: loss %.9f, TRL's %.9f", loss, beta, st.Loss, want[loss])
			}
			if st.Steps != 1 {
				t.Errorf("%s, beta %v: %d optimizer steps, want 1", loss, beta, st.Steps)
			}
		}
	}
	// Seq-mean with a lopsided batch: A = (1, -1) on sequences of different
	// lengths still averages -A per sequence over all four.
	ro2, adv2 := handRollout(t, tok)
	adv2[0] = []float64{1, 0}
	st, err := Update(tinyMember(t, 3), ro2, adv2, updateConfig(SeqMeanTokenMean, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(st.Loss-(-0.25)) > 1e-9 {
		t.Errorf("seq-mean-token-mean with one signed sample of four: loss %.9f, want -0.25", st.Loss)
	}
}

// TestAllZeroAdvantageStillSteps: as TRL, a batch without signal still takes
// the optimizer step; after an earlier step AdamW's first moment moves the
// weights even though this gradient is zero.
func TestAllZeroAdvantageStillSteps(t *testing.T) {
	tok := tokenizer.NewBytes()
	m := tinyMember(t, 4)
	ro, adv := handRollout(t, tok)
	c := updateConfig(TokenMean, 0)
	if _, err := Update(m, ro, adv, c, 0); err != nil {
		t.Fatal(err)
	}
	probe := ro[0][1]
	sb := buildBatch([]*Completion{&probe}, tok.EOS())
	before, _, err := m.Model.Forward(sb.b.Inputs, sb.b.Targets, sb.b.B, sb.b.T, false)
	if err != nil {
		t.Fatal(err)
	}
	before = append([]float32(nil), before...)
	zero := [][]float64{{0, 0}, {0, 0}}
	st, err := Update(m, ro, zero, c, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Steps != 1 || st.GradNorm != 0 || st.Loss != 0 {
		t.Errorf("all-zero advantages: %+v, want one step with a zero gradient and loss", st)
	}
	after, _, err := m.Model.Forward(sb.b.Inputs, sb.b.Targets, sb.b.B, sb.b.T, false)
	if err != nil {
		t.Fatal(err)
	}
	moved := false
	for i := range after {
		moved = moved || after[i] != before[i]
	}
	if !moved {
		t.Error("the zero-gradient step left the weights unchanged: no optimizer step was taken")
	}
}

// TestRecomputedLogProbsMatchSamplingAtTemperature: samples drawn at T = 0.7
// and the update's recomputed old log-probabilities are the same
// distribution's (the logits divided by T), so logp_mismatch is float
// rounding only; at temperature 1 it would be the gap between two
// distributions.
func TestRecomputedLogProbsMatchSamplingAtTemperature(t *testing.T) {
	m := tinyMember(t, 5)
	prompts := []Prompt{{ID: "a", Views: []string{"1+2=?"}}, {ID: "b", Views: []string{"3+4=?"}}}
	c := updateConfig(TokenMean, 0)
	c.Temperature, c.NumGenerations, c.MaxNewTokens, c.Seed = 0.7, 4, 12, 9
	c.GRPO.NumIterations = 2
	ro, err := Generate(m, 0, prompts, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	adv := [][]float64{{1, -1, 0.5, -0.5}, {1, -1, 0.5, -0.5}}
	st, err := Update(m, ro, adv, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	// float32 logits from a batched forward against the sampler's float64
	// log-softmax of decode logits: agreement to ~1e-6 per token.
	if st.LogPMismatch > 1e-4 {
		t.Errorf("logp_mismatch %.3g at T = 0.7: the update's log-probs are not the sampling distribution's", st.LogPMismatch)
	}
	// The per-token statistics are the tempered distribution's too: entropy
	// at T = 0.7 is lower than at T = 1 on the same completions.
	var cs []*Completion
	for p := range ro {
		for k := range ro[p] {
			cs = append(cs, &ro[p][k])
		}
	}
	_, _, hT, err := completionStats(m.Model, cs, m.Tok.EOS(), 4, 0.7, true)
	if err != nil {
		t.Fatal(err)
	}
	_, _, h1, err := completionStats(m.Model, cs, m.Tok.EOS(), 4, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if hT[0] >= h1[0] {
		t.Errorf("entropy at T = 0.7 %.4f not below T = 1's %.4f", hT[0], h1[0])
	}
}

// TestStepsPerGenerationSplitsByPrompt: with steps_per_generation 2, each
// half of the prompts takes its own optimizer step, normalised over its own
// completions: the weights end as two one-step updates, one per half, in
// order (the second half here has no signal but still steps).
func TestStepsPerGenerationSplitsByPrompt(t *testing.T) {
	tok := tokenizer.NewBytes()
	ro, adv := handRollout(t, tok)
	c := updateConfig(TokenMean, 0)

	split := tinyMember(t, 4)
	cs := c
	cs.GRPO.StepsPerGeneration = 2
	st, err := Update(split, ro, adv, cs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Steps != 2 {
		t.Errorf("%d steps, want 2", st.Steps)
	}
	// Token-mean over the first half's own tokens, -(1*3 - 1*17)/(3+17) =
	// 0.7, and 0 for the second half: the reported loss is their mean.
	if math.Abs(st.Loss-0.35) > 1e-6 {
		t.Errorf("loss %v, want 0.35 (each mini-batch normalised by its own tokens)", st.Loss)
	}

	byHand := tinyMember(t, 4)
	if _, err := Update(byHand, ro[:1], adv[:1], c, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Update(byHand, ro[1:], adv[1:], c, 1); err != nil {
		t.Fatal(err)
	}
	got, want := cpu.Data(split.Model.Params()), cpu.Data(byHand.Model.Params())
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("weight %d: %v after two mini-batch steps, %v after two updates by hand", i, got[i], want[i])
		}
	}
}

// TestMicroBatchesCutByCountAndTokens: passes are consecutive, cover every
// completion once, hold at most micro completions and, past the first, at
// most passTokens padded positions.
func TestMicroBatchesCutByCountAndTokens(t *testing.T) {
	mk := func(prompt, completion int) *Completion {
		return &Completion{Prompt: make([]int32, prompt), Tokens: make([]int32, completion)}
	}
	long := passTokens + 50
	cs := []*Completion{mk(10, 91), mk(10, 41), mk(1, long), mk(10, 11), mk(10, 11), mk(10, 11), mk(10, 11), mk(10, 11)}
	for i := 0; i < 40; i++ {
		cs = append(cs, mk(5, 20+i%7))
	}
	for _, micro := range []int{1, 3, 32, 1000} {
		got := microBatches(cs, micro)
		next := 0
		for _, p := range got {
			lo, hi := p[0], p[1]
			if lo != next || hi <= lo {
				t.Fatalf("micro %d: pass %v after %d", micro, p, next)
			}
			next = hi
			if hi-lo > micro {
				t.Fatalf("micro %d: pass %v holds %d completions", micro, p, hi-lo)
			}
			T := 0
			for _, c := range cs[lo:hi] {
				T = max(T, len(c.Prompt)+len(c.Tokens)-1)
			}
			if hi-lo > 1 && (hi-lo)*T > passTokens {
				t.Fatalf("micro %d: pass %v holds %d x %d positions", micro, p, hi-lo, T)
			}
			// Greedy: the next completion would not have fitted.
			if hi < len(cs) && hi-lo < micro {
				T2 := max(T, len(cs[hi].Prompt)+len(cs[hi].Tokens)-1)
				if (hi-lo+1)*T2 <= passTokens {
					t.Fatalf("micro %d: pass %v stopped before completion %d, which fits", micro, p, hi)
				}
			}
		}
		if next != len(cs) {
			t.Fatalf("micro %d: passes end at %d of %d", micro, next, len(cs))
		}
	}
}

// TestUpdateMemoryOptions: the spec's recompute and logit_rows reach the
// update's passes (the model ends the update set so) and give the same
// loss, and weights within float32 rounding of the output head's sums, as
// an update without them (with recompute alone: the same bits).
func TestUpdateMemoryOptions(t *testing.T) {
	tok := tokenizer.NewBytes()
	c := ConfigFromSpec(&spec.RunSpec{Recompute: true, LogitRows: 5})
	if !c.Recompute || c.LogitRows != 5 {
		t.Fatalf("ConfigFromSpec: recompute %v, logit rows %d", c.Recompute, c.LogitRows)
	}
	weights := func(recompute bool, rows int) (float64, []float32) {
		m := tinyMember(t, 6)
		ro, adv := handRollout(t, tok)
		uc := updateConfig(TokenMean, 0)
		uc.Recompute, uc.LogitRows = recompute, rows
		st, err := Update(m, ro, adv, uc, 0)
		if err != nil {
			t.Fatal(err)
		}
		if m.Model.Recompute != recompute || m.Model.LogitRows != rows {
			t.Errorf("the update ran with recompute %v, logit rows %d; want %v, %d", m.Model.Recompute, m.Model.LogitRows, recompute, rows)
		}
		w, err := m.Model.CopyParams()
		if err != nil {
			t.Fatal(err)
		}
		return st.Loss, w
	}
	loss0, w0 := weights(false, 0)
	loss1, w1 := weights(true, 0)
	if loss0 != loss1 || !slices.Equal(w0, w1) {
		t.Errorf("recompute changed the update: loss %v against %v", loss1, loss0)
	}
	loss2, w2 := weights(true, 5)
	if math.Abs(loss2-loss0) > 1e-9 {
		t.Errorf("logit rows 5: loss %v against %v", loss2, loss0)
	}
	for i := range w0 {
		if math.Abs(float64(w2[i]-w0[i])) > 1e-6 {
			t.Fatalf("logit rows 5: weight %d %v against %v", i, w2[i], w0[i])
		}
	}
}

// TestUpdateInBF16: the spec's update_precision bf16 reaches the update's
// passes, which then give other weights than float32's (the matmuls
// rounded), near them (AdamW moves a weight by at most about the rate a
// step, so no weight lies more than twice that from float32's),
// and the loss within 0.01 (at the first step it is the same: the
// sampling log-probs are recomputed in bf16 too, so the ratio is 1).
func TestUpdateInBF16(t *testing.T) {
	tok := tokenizer.NewBytes()
	if c := ConfigFromSpec(&spec.RunSpec{UpdatePrecision: "bf16"}); !c.BF16Matmuls {
		t.Fatal("ConfigFromSpec: update_precision bf16 did not set BF16Matmuls")
	}
	var steps int
	run := func(bf16 bool) (float64, []float32) {
		m := tinyMember(t, 6)
		ro, adv := handRollout(t, tok)
		uc := updateConfig(TokenMean, 0)
		uc.BF16Matmuls = bf16
		st, err := Update(m, ro, adv, uc, 0)
		if err != nil {
			t.Fatal(err)
		}
		steps = st.Steps
		if m.Model.BF16Matmuls != bf16 {
			t.Errorf("the update ran with BF16Matmuls %v, want %v", m.Model.BF16Matmuls, bf16)
		}
		w, err := m.Model.CopyParams()
		if err != nil {
			t.Fatal(err)
		}
		return st.Loss, w
	}
	loss32, w32 := run(false)
	loss16, w16 := run(true)
	if slices.Equal(w16, w32) {
		t.Fatal("bf16 left the update's weights as they were")
	}
	if math.Abs(loss16-loss32) > 0.01 {
		t.Errorf("loss %v in bf16, %v in float32", loss16, loss32)
	}
	for i := range w32 {
		if math.Abs(float64(w16[i]-w32[i])) > 2*1e-3*float64(steps)*1.01 {
			t.Fatalf("weight %d: %v in bf16, %v in float32", i, w16[i], w32[i])
		}
	}
}
