package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/corl-project/corl/cohort"
	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/rl"
	"go.temporal.io/sdk/activity"
)

// An evaluation is a pure function of the weights, the tokenizer, the
// problems (in the member's view), the options and the backend: runs of a
// sweep that start from one base evaluate that base on the same test split
// with the same seed, cell after cell. Evaluate stores each result under a
// key that hashes all of these and reuses it, so a base is scored once per
// (split, seed) instead of once per cell. A model changed by a single bit
// hashes elsewhere, so a reused result is the one that would be computed.

// evalCacheKey is the blob key of m's evaluation on problems under o, or ""
// when the tokenizer cannot be hashed (then nothing is cached).
func evalCacheKey(backend string, m *rl.Member, problems []datasets.Problem, o evaluate.Options) (string, error) {
	tok, ok := m.Tok.(interface{ JSON() []byte })
	if !ok {
		return "", nil
	}
	fp, err := m.Model.Fingerprint()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	opts, err := json.Marshal(o)
	if err != nil {
		return "", err
	}
	probs, err := json.Marshal(problems)
	if err != nil {
		return "", err
	}
	// The version moves whenever a kernel's bits change (v2: the attention
	// softmax kernel), so no result of older numerics is reused, and
	// whenever the cached output gains a field (v3: the whole record); v4:
	// each member samples from a seed of its own; v5: the own-view pool.
	fmt.Fprintf(h, "corl eval v5\x00%s\x00%d\x00", backend, m.View)
	for _, part := range [][]byte{fp[:], tok.JSON(), opts, probs} {
		fmt.Fprintf(h, "%d\x00", len(part))
		h.Write(part)
	}
	if m.View != 0 {
		for _, p := range datasets.Rephrase(problems, m.View) {
			fmt.Fprintf(h, "%d\x00%s", len(p.Prompt), p.Prompt)
		}
	}
	return "cache/eval/" + hex.EncodeToString(h.Sum(nil)) + ".json", nil
}

// cachedOr returns the result stored under key when there is a readable
// one, else computes it and stores it there ("": not cached). A failed
// store only costs a later recomputation.
func cachedOr[T any](ctx context.Context, a *Activities, key string, compute func() (T, error)) (T, error) {
	if key != "" {
		if b, err := a.Store.Get(ctx, key); err == nil {
			var out T
			if json.Unmarshal(b, &out) == nil {
				return out, nil
			}
		}
	}
	out, err := compute()
	if err != nil || key == "" {
		return out, err
	}
	if b, err := json.Marshal(out); err == nil {
		_ = a.Store.Put(ctx, key, b)
	}
	return out, nil
}

// Evaluate runs greedy pass@1 of the member on the held-out problems, in the
// original wording and in the member's own view.
func (a *Activities) Evaluate(ctx context.Context, ref pipeline.MemberRef) (pipeline.EvalOutput, error) {
	defer a.exclusive(ctx, fmt.Sprintf("round %d evaluate %s", ref.Round, memberName(ref)))()
	h, err := a.member(ref)
	if err != nil {
		return pipeline.EvalOutput{}, err
	}
	d, err := a.runData(&ref.Spec)
	if err != nil {
		return pipeline.EvalOutput{}, err
	}
	start := time.Now()
	o := evaluate.OptionsFromSpec(&ref.Spec).ForMember(h.member.Name)
	key, err := evalCacheKey(a.Backend.Name(), h.member, d.Eval, o)
	if err != nil {
		return pipeline.EvalOutput{}, err
	}
	out, err := cachedOr(ctx, a, key, func() (pipeline.EvalOutput, error) {
		res, own, err := cohort.EvaluateMember(h.member, d.Eval, o)
		return pipeline.NewEvalOutput(res, own, h.member.View, record.Truth(d.Eval, o.Answers)), err
	})
	if err != nil {
		return pipeline.EvalOutput{}, err
	}
	if d.Predicts(ref.Round, len(ref.Spec.Members)) {
		if out.Predict, err = a.predict(ctx, h.member, d.Predict, o); err != nil {
			return pipeline.EvalOutput{}, err
		}
	}
	a.Metrics.Stage(h.run, h.member.Name, "evaluate", time.Since(start).Seconds(), activity.GetInfo(ctx).Attempt)
	a.Metrics.Eval(h.run, h.member.Name, out.PassAt1, out.PassAt1OwnView)
	return out, nil
}

// predict is the member on the predictor problems, cached like an
// evaluation under a key of its own.
func (a *Activities) predict(ctx context.Context, m *rl.Member, problems []datasets.Problem, o evaluate.Options) (*pipeline.PredictOutput, error) {
	key, err := evalCacheKey(a.Backend.Name(), m, problems, o)
	if err != nil {
		return nil, err
	}
	if key != "" {
		key = strings.TrimSuffix(key, ".json") + ".predict.json"
	}
	p, err := cachedOr(ctx, a, key, func() (pipeline.PredictOutput, error) {
		res, err := cohort.PredictMember(m, problems, o)
		return pipeline.PredictOutput{Correct: res.Correct, Pool: res.CohortAnswers(), Truth: record.Truth(problems, o.Answers)}, err
	})
	if err != nil {
		return nil, err
	}
	return &p, nil
}
