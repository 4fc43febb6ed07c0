package rl

import (
	"fmt"

	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/generate"
	"github.com/corl-project/corl/model"
)

// Completion is one sampled response.
type Completion struct {
	Prompt []int32
	// Tokens are the completion proper, the tokens trained on: a stop
	// string's tokens are not (EOS is). Generated counts every sampled token.
	Tokens     []int32
	SampleLogP []float32
	Generated  int
	Text       string
	Answer     string // normalised; "" if none
}

// Rollout is one member's completions: [prompt][sample].
type Rollout [][]Completion

// SampleSeed derives a per-sample seed from the run seed and the sample's
// coordinates, so a re-run of a round draws exactly the same samples.
func SampleSeed(seed uint64, round, member, prompt, sample int) uint64 {
	x := seed
	for _, v := range []int{round, member, prompt, sample} {
		x ^= uint64(v) + 0x9e3779b97f4a7c15 + (x << 6) + (x >> 2)
		x = splitmix(x)
	}
	return x
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Generate samples NumGenerations completions per prompt from member mi.
func Generate(m *Member, mi int, prompts []Prompt, c Config, round int) (Rollout, error) {
	var reqs []generate.Request
	for p, pr := range prompts {
		ids, err := m.Tok.Encode(evaluate.PromptText(pr.view(m.View)))
		if err != nil {
			return nil, fmt.Errorf("%s: prompt %s: %w", m.Name, pr.ID, err)
		}
		for k := 0; k < c.NumGenerations; k++ {
			reqs = append(reqs, generate.Request{Prompt: ids, Params: generate.Params{
				MaxNewTokens: c.MaxNewTokens, Temperature: c.Temperature, TopK: c.TopK, TopP: c.TopP,
				Stop: []string{"\nQ:"}, Seed: SampleSeed(c.Seed, round, mi, p, k)}})
		}
	}
	outs, err := (&generate.Generator{Model: m.Model, Tok: m.Tok, KV: c.KV, Weights: c.Weights}).Run(reqs)
	if err != nil {
		return nil, fmt.Errorf("%s: generate: %w", m.Name, err)
	}
	ro := make(Rollout, len(prompts))
	for p := range prompts {
		ro[p] = make([]Completion, c.NumGenerations)
		rule := c.Answers.ForPrompt(prompts[p].view(m.View)) // once per prompt: a choice prompt's options are parsed
		for k := range ro[p] {
			r, o := reqs[p*c.NumGenerations+k], outs[p*c.NumGenerations+k]
			ans := ""
			if a, ok := rule.Extract(o.Text); ok {
				ans = rule.Normalize(a)
			}
			ro[p][k] = Completion{Prompt: r.Prompt, Tokens: o.Tokens[:o.Keep], SampleLogP: o.LogProbs[:o.Keep],
				Generated: len(o.Tokens), Text: o.Text, Answer: ans}
		}
	}
	return ro, nil
}

// Cost is the rollout's sampled tokens and forward FLOPs (prompts included).
func (ro Rollout) Cost(m *model.Model) (tokens int, flops float64) {
	for _, row := range ro {
		for _, cp := range row {
			tokens += cp.Generated
			flops += m.ForwardFLOPs(len(cp.Prompt) + cp.Generated)
		}
	}
	return tokens, flops
}

// Groups turns a rollout into what strategies grade.
func (ro Rollout) Groups() []Group {
	gs := make([]Group, len(ro))
	for p, cs := range ro {
		gs[p] = make(Group, len(cs))
		for k, c := range cs {
			gs[p][k] = Sample{Answer: c.Answer, Tokens: len(c.Tokens)}
		}
	}
	return gs
}
