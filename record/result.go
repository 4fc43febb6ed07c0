package record

import (
	"sort"

	"github.com/corl-project/corl/stats"
)

// Result is an evaluation summary: a member on held-out problems, as the
// evaluate package scores it and the evaluation record keeps it. It lives
// here, with the records, so that the workflow package can hold one
// without importing the engine that computes it.
type Result struct {
	N        int                `json:"n"`
	PassAt1  float64            `json:"pass_at_1"` // greedy
	NoAnswer float64            `json:"no_answer_rate"`
	ByTask   map[string]float64 `json:"pass_at_1_by_task"`
	Correct  []bool             `json:"correct,omitempty"` // per problem, in input order (kept for paired comparisons)
	Answers  []string           `json:"-"`                 // normalised final answers ("" for none), in input order
	// With Options.Samples = k > 0:
	Samples        int                `json:"samples,omitempty"`
	SampledPassAt1 float64            `json:"sampled_pass_at_1,omitempty"` // mean over problems of (correct samples)/k
	MajAtK         float64            `json:"maj_at_k,omitempty"`          // the samples' unique plurality answer is right
	SampledByTask  map[string]float64 `json:"sampled_pass_at_1_by_task,omitempty"`
	SampleCorrect  []int              `json:"sample_correct,omitempty"` // per problem: right samples of k
	SampleAnswers  [][]string         `json:"-"`                        // per problem: the k normalised answers
	Truth          []string           `json:"-"`                        // per problem: the normalised right answer
	// 95% bootstrap intervals over problems.
	PassAt1CI stats.Interval  `json:"pass_at_1_ci"`
	SampledCI *stats.Interval `json:"sampled_pass_at_1_ci,omitempty"`
}

// Scores are the per-problem greedy outcomes (1 right, 0 not).
func (r Result) Scores() []float64 {
	out := make([]float64, len(r.Correct))
	for i, c := range r.Correct {
		if c {
			out[i] = 1
		}
	}
	return out
}

// SampledScores are the per-problem shares of right samples (nil unsampled).
func (r Result) SampledScores() []float64 {
	if r.Samples == 0 {
		return nil
	}
	out := make([]float64, len(r.SampleCorrect))
	for i, c := range r.SampleCorrect {
		out[i] = float64(c) / float64(r.Samples)
	}
	return out
}

// CohortAnswers is what the member adds to the cohort's pooled vote, per
// problem: its k samples when sampled, else its greedy answer.
func (r Result) CohortAnswers() [][]string {
	if r.Samples > 0 {
		return r.SampleAnswers
	}
	out := make([][]string, len(r.Answers))
	for i, a := range r.Answers {
		out[i] = []string{a}
	}
	return out
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
