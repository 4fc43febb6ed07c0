package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	// whenever the cached output gains a field (v3: the whole record).
	fmt.Fprintf(h, "corl eval v3\x00%s\x00%d\x00", backend, m.View)
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

// cachedEval returns the stored evaluation under key, if there is a readable one.
func (a *Activities) cachedEval(ctx context.Context, key string) (pipeline.EvalOutput, bool) {
	if key == "" {
		return pipeline.EvalOutput{}, false
	}
	b, err := a.Store.Get(ctx, key)
	if err != nil {
		return pipeline.EvalOutput{}, false
	}
	var out pipeline.EvalOutput
	if json.Unmarshal(b, &out) != nil {
		return pipeline.EvalOutput{}, false
	}
	return out, true
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
	o := evaluate.OptionsFromSpec(&ref.Spec)
	key, err := evalCacheKey(a.Backend.Name(), h.member, d.Eval, o)
	if err != nil {
		return pipeline.EvalOutput{}, err
	}
	out, hit := a.cachedEval(ctx, key)
	if !hit {
		res, own, err := cohort.EvaluateMember(h.member, d.Eval, o)
		if err != nil {
			return pipeline.EvalOutput{}, err
		}
		out = pipeline.NewEvalOutput(res, own, h.member.View, record.Truth(d.Eval, o.Answers))
		if key != "" {
			// A failed store only costs a later recomputation.
			if b, err := json.Marshal(out); err == nil {
				_ = a.Store.Put(ctx, key, b)
			}
		}
	}
	a.Metrics.Stage(h.run, h.member.Name, "evaluate", time.Since(start).Seconds(), activity.GetInfo(ctx).Attempt)
	a.Metrics.Eval(h.run, h.member.Name, out.PassAt1, out.PassAt1OwnView)
	return out, nil
}
