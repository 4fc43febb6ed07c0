package activities

import (
	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/rl"
)

func evaluateTexts(m *rl.Member, eval []datasets.Problem, maxNew int) (evaluate.Result, []string, error) {
	return evaluate.PassAt1Texts(m.Model, m.Tok, eval, maxNew)
}
