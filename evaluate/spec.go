package evaluate

import (
	"github.com/corl-project/corl/checker"
	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/spec"
)

// OptionsFromSpec is how a run's evaluations go: greedy pass@1 and, with
// eval.samples, sampled completions at eval.temperature (default: the
// training temperature), seeded by the run seed.
func OptionsFromSpec(s *spec.RunSpec) Options {
	temp := s.Eval.Temperature
	if temp == 0 {
		temp = s.Generation.Temperature
	}
	return Options{MaxNew: s.Generation.MaxCompletion, Answers: datasets.AnswerRuleFromSpec(s.Data), Samples: s.Eval.Samples,
		Temperature: temp, Seed: s.Seed, Checker: checker.FromSpec(s.Data.Checker)}
}
