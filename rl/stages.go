package rl

import (
	"fmt"

	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/record"
)

// The round's stages that both drivers run, written once: the in-process
// runner (Round) and the pipeline's activities call these, so neither
// re-derives a reward, an advantage, a diagnostic or a cost.

// Graded is a round's grading: each member's advantages per prompt and
// sample, and the round's diagnostics.
type Graded struct {
	Advantages [][][]float64 // [member][prompt][sample]
	Diag       record.Diagnostics
}

// RewardError is a reward that cannot be built from the configuration
// (retrying cannot help).
type RewardError struct{ Err error }

func (e *RewardError) Error() string { return e.Err.Error() }
func (e *RewardError) Unwrap() error { return e.Err }

// Grade rewards every member's groups by the configured reward (only
// ground truth sees the labels), and turns the rewards into advantages and
// the round's diagnostics. Intrinsic signals and a checker's keys must
// already be in groups and prompts.
func Grade(c Config, prompts []Prompt, groups [][]Group) (Graded, error) {
	strategy, err := StrategyFor(c, prompts)
	if err != nil {
		return Graded{}, &RewardError{err}
	}
	out, err := strategy.Reward(Input{Rollouts: groups, Threshold: c.Threshold})
	if err != nil {
		return Graded{}, err
	}
	g := Graded{Diag: Diagnose(groups, out, TruthOf(prompts), c.Threshold)}
	for i := range groups {
		g.Advantages = append(g.Advantages, Advantages(out.Rewards[i], c.GRPO.ScaleRewards))
	}
	return g, nil
}

// SetJudgeScores puts a judge's scores of one member's samples
// ([prompt][sample], JudgeScores) on its groups.
func SetJudgeScores(groups []Group, scores [][]float64) error {
	if len(scores) != len(groups) {
		return fmt.Errorf("judge scores for %d prompts, the rollout has %d", len(scores), len(groups))
	}
	for p := range groups {
		if len(scores[p]) != len(groups[p]) {
			return fmt.Errorf("judge scores for %d samples of prompt %d, the rollout has %d", len(scores[p]), p, len(groups[p]))
		}
		for k := range groups[p] {
			groups[p][k].JudgeScore = scores[p][k]
		}
	}
	return nil
}

// UpdateFLOPs is the cost of an update that trained on tokens tokens:
// forward and backward at the round's longest sequence.
func UpdateFLOPs(m *model.Model, c Config, tokens int) float64 {
	return m.FLOPsPerToken(2*c.MaxNewTokens) * float64(tokens)
}
