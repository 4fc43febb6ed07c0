// Package evaluate measures a model on labeled problems: pass@1 with greedy
// decoding, and maj@k over sampled completions, graded by the datasets
// package. Labels are used here and in diagnostics, never in a label-free
// reward.
package evaluate

import (
	"fmt"
	"sort"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/generate"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/tokenizer"
)

// Format is how problems are shown to the project's models: the "qa" chat
// template, the completion a worked solution ended by EOS.
const Format = "Q: {prompt}\nA:"

// PromptText renders a problem's prompt.
func PromptText(prompt string) string { return tokenizer.ChatTemplate{Format: Format}.Apply(prompt) }

// Result is an evaluation summary.
type Result struct {
	N        int                `json:"n"`
	PassAt1  float64            `json:"pass_at_1"`
	NoAnswer float64            `json:"no_answer_rate"`
	ByTask   map[string]float64 `json:"pass_at_1_by_task"`
	Correct  []bool             `json:"-"` // per problem, in input order
	Answers  []string           `json:"-"` // normalised final answers ("" for none), in input order
}

// PassAt1 decodes every problem greedily, grades the completion under the
// answer rule and keeps each completion's normalised final answer.
func PassAt1(m *model.Model, tok tokenizer.Tokenizer, problems []datasets.Problem, maxNew int, rule datasets.AnswerRule) (Result, error) {
	reqs := make([]generate.Request, len(problems))
	for i, p := range problems {
		ids, err := tok.Encode(PromptText(p.Prompt))
		if err != nil {
			return Result{}, fmt.Errorf("problem %s: %w", p.ID, err)
		}
		reqs[i] = generate.Request{Prompt: ids, Params: generate.Params{MaxNewTokens: maxNew, Stop: []string{"\nQ:"}}}
	}
	outs, err := (&generate.Generator{Model: m, Tok: tok}).Run(reqs)
	if err != nil {
		return Result{}, err
	}
	res := Result{N: len(problems), ByTask: map[string]float64{}, Correct: make([]bool, len(problems)), Answers: make([]string, len(problems))}
	count := map[string]int{}
	for i, p := range problems {
		if a, ok := rule.Extract(outs[i].Text); ok {
			res.Answers[i] = datasets.Normalize(a)
		}
		v := rule.Grade(outs[i].Text, p.Answer)
		res.Correct[i] = v == datasets.Correct
		count[p.Task]++
		if res.Correct[i] {
			res.PassAt1++
			res.ByTask[p.Task]++
		}
		if v == datasets.NoAnswer {
			res.NoAnswer++
		}
	}
	if res.N > 0 {
		res.PassAt1 /= float64(res.N)
		res.NoAnswer /= float64(res.N)
	}
	for task, n := range count {
		res.ByTask[task] /= float64(n)
	}
	return res, nil
}

// Tasks returns the task names of a result in order.
func (r Result) Tasks() []string {
	var names []string
	for t := range r.ByTask {
		names = append(names, t)
	}
	sort.Strings(names)
	return names
}
