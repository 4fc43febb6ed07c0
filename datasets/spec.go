package datasets

import "github.com/corl-project/corl/spec"

// AnswerRuleFromSpec is what counts as a final answer for a run's data:
// numbers only for built-in tasks; for a file, any marked answer, and the
// last number when data.last_number_fallback is set.
func AnswerRuleFromSpec(d spec.Data) AnswerRule {
	if d.File == "" {
		return TaskAnswers
	}
	return AnswerRule{LastNumber: d.LastNumber, Type: d.AnswerType}
}
