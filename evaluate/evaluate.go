package evaluate

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/corl-project/corl/checker"
	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/generate"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/stats"
	"github.com/corl-project/corl/tokenizer"
)

// Format is how problems are shown to the project's models: the "qa" chat
// template, the completion a worked solution ended by EOS.
const Format = "Q: {prompt}\nA:"

// PromptText renders a problem's prompt.
func PromptText(prompt string) string { return tokenizer.ChatTemplate{Format: Format}.Apply(prompt) }

// Options say how to evaluate.
type Options struct {
	MaxNew  int                 // completion length
	Answers datasets.AnswerRule // what counts as a final answer
	// Samples > 0 adds k sampled completions per problem at Temperature:
	// sampled pass@1 (the mean over the k) and maj@k. Sample j of problem
	// i draws from a seed of (Seed, i, j), so two evaluations of one
	// checkpoint agree and two checkpoints are compared on the same draws.
	Samples     int
	Temperature float32
	Seed        uint64
	// Checker, when set, judges the responses instead of Answers: its
	// answer_key is the answer (the label's key, from the label given as a
	// response, is the right one) and its correct, when given, the verdict.
	Checker *checker.Spec `json:",omitempty"`
}

// Result is an evaluation summary (its type lives with the records).
type Result = record.Result

// PassAt1 decodes every problem greedily, grades the completion under the
// answer rule and keeps each completion's normalised final answer.
func PassAt1(m *model.Model, tok tokenizer.Tokenizer, problems []datasets.Problem, maxNew int, rule datasets.AnswerRule) (Result, error) {
	return Run(m, tok, problems, Options{MaxNew: maxNew, Answers: rule})
}

// Run evaluates m on problems: greedy pass@1 and, with o.Samples, sampled
// pass@1 and maj@k. Every completion goes through one generator run, so the
// k samples of a problem share its prefill.
func Run(m *model.Model, tok tokenizer.Tokenizer, problems []datasets.Problem, o Options) (Result, error) {
	k := max(o.Samples, 0)
	reqs := make([]generate.Request, 0, len(problems)*(1+k))
	for i, p := range problems {
		ids, err := tok.Encode(PromptText(p.Prompt))
		if err != nil {
			return Result{}, fmt.Errorf("problem %s: %w", p.ID, err)
		}
		stop := []string{"\nQ:"}
		reqs = append(reqs, generate.Request{Prompt: ids, Params: generate.Params{MaxNewTokens: o.MaxNew, Stop: stop}})
		for j := 0; j < k; j++ {
			reqs = append(reqs, generate.Request{Prompt: ids, Params: generate.Params{MaxNewTokens: o.MaxNew, Stop: stop,
				Temperature: o.Temperature, Seed: sampleSeed(o.Seed, i, j)}})
		}
	}
	outs, err := (&generate.Generator{Model: m, Tok: tok}).Run(reqs)
	if err != nil {
		return Result{}, err
	}
	res := Result{N: len(problems), ByTask: map[string]float64{}, Correct: make([]bool, len(problems)), Answers: make([]string, len(problems)),
		Truth: make([]string, len(problems))}
	if k > 0 {
		res.Samples, res.SampledByTask = k, map[string]float64{}
		res.SampleCorrect, res.SampleAnswers = make([]int, len(problems)), make([][]string, len(problems))
	}
	judge := func(i, j int, rule datasets.AnswerRule) (string, datasets.Verdict) {
		return rule.Judge(outs[i*(1+k)+j].Text, problems[i].Answer)
	}
	if o.Checker != nil {
		if judge, err = checkerJudge(*o.Checker, problems, outs, k, res.Truth); err != nil {
			return Result{}, err
		}
	}
	count := map[string]int{}
	for i, p := range problems {
		row := outs[i*(1+k) : (i+1)*(1+k)]
		var v datasets.Verdict
		rule := o.Answers.ForPrompt(p.Prompt)
		if o.Checker == nil {
			res.Truth[i] = rule.Normalize(p.Answer)
		}
		res.Answers[i], v = judge(i, 0, rule)
		res.Correct[i] = v == datasets.Correct
		count[p.Task]++
		if res.Correct[i] {
			res.PassAt1++
			res.ByTask[p.Task]++
		}
		if v == datasets.NoAnswer {
			res.NoAnswer++
		}
		if k == 0 {
			continue
		}
		answers := make([]string, k)
		for j := range row[1:] {
			var sv datasets.Verdict
			if answers[j], sv = judge(i, j+1, rule); sv == datasets.Correct {
				res.SampleCorrect[i]++
			}
		}
		res.SampleAnswers[i] = answers
		frac := float64(res.SampleCorrect[i]) / float64(k)
		res.SampledPassAt1 += frac
		res.SampledByTask[p.Task] += frac
		if maj, _, tie := datasets.MostCommon(answers); !tie && maj != "" && maj == res.Truth[i] {
			res.MajAtK++
		}
	}
	if res.N > 0 {
		n := float64(res.N)
		res.PassAt1 /= n
		res.NoAnswer /= n
		res.SampledPassAt1 /= n
		res.MajAtK /= n
	}
	for task, n := range count {
		res.ByTask[task] /= float64(n)
		if k > 0 {
			res.SampledByTask[task] /= float64(n)
		}
	}
	res.PassAt1CI = stats.MeanCI(res.Scores(), 1)
	if k > 0 {
		ci := stats.MeanCI(res.SampledScores(), 1)
		res.SampledCI = &ci
	}
	return res, nil
}

// checkerJudge runs the checker once over every response (and every label,
// given as a response, for its key, written to truth) and returns the
// judge that reads its verdicts.
func checkerJudge(c checker.Spec, problems []datasets.Problem, outs []generate.Output, k int, truth []string) (func(i, j int, _ datasets.AnswerRule) (string, datasets.Verdict), error) {
	items := make([]checker.Item, 0, len(outs)+len(problems))
	for i, p := range problems {
		for j := 0; j <= k; j++ {
			items = append(items, checker.Item{Prompt: p.Prompt, Response: outs[i*(1+k)+j].Text, Answer: p.Answer})
		}
	}
	for _, p := range problems {
		items = append(items, checker.Item{Prompt: p.Prompt, Response: p.Answer})
	}
	vs, err := checker.Run(context.Background(), c, items)
	if err != nil {
		return nil, err
	}
	key := func(v checker.Verdict) string {
		if v.AnswerKey == nil {
			return ""
		}
		return *v.AnswerKey
	}
	for i := range problems {
		truth[i] = key(vs[len(outs)+i])
	}
	return func(i, j int, _ datasets.AnswerRule) (string, datasets.Verdict) {
		v := vs[i*(1+k)+j]
		a := key(v)
		switch {
		case a == "" && v.Correct == nil:
			return "", datasets.NoAnswer
		case v.Correct != nil && *v.Correct, v.Correct == nil && a == truth[i]:
			return a, datasets.Correct
		}
		return a, datasets.Wrong
	}, nil
}

// ForMember is o for the member named name: its samples draw from a seed
// of (Seed, name). Two members of one cohort thus sample independently,
// even an identical copy with the same weights, whose votes would
// otherwise be the model's own bit for bit; one member keeps its draws
// from run to run of the same seed, so runs are still compared on the
// same draws.
func (o Options) ForMember(name string) Options {
	h := fnv.New64a()
	h.Write([]byte(name))
	o.Seed = sampleSeed(o.Seed, int(h.Sum64()>>1), -1)
	return o
}

// sampleSeed derives sample j of problem i's seed (splitmix64 steps).
func sampleSeed(seed uint64, i, j int) uint64 {
	x := seed ^ 0x6576616c
	for _, v := range []uint64{uint64(i), uint64(j)} {
		x += v*0x9e3779b97f4a7c15 + 0x9e3779b97f4a7c15
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
		x = (x ^ (x >> 27)) * 0x94d049bb133111eb
		x ^= x >> 31
	}
	return x
}
