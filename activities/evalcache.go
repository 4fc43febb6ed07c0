package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/rl"
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
	// softmax kernel), so no result of older numerics is reused.
	fmt.Fprintf(h, "corl eval v2\x00%s\x00%d\x00", backend, m.View)
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
