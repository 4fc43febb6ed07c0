package evaluate

import (
	"fmt"

	"github.com/corl-project/corl/datasets"
)

// Signal says, before any update, whether RL has something to learn from:
// GRPO learns only from a prompt whose samples are rewarded unequally, so
// a model whose k samples per problem are all right or all wrong (under
// the labels, or under a vote) moves nothing, whichever method runs.
type Signal struct {
	Samples int `json:"samples"`
	// Mixed is the share of problems whose samples are neither all right
	// nor all wrong: ground-truth RL's prompts with signal.
	Mixed float64 `json:"mixed"`
	// Labeled is the share of problems the labeller's samples vote on (a
	// unique plurality answer), LabelAcc the share of those whose label is
	// right, VoteMixed the share of problems that are labelled and whose
	// samples agree with the label only in part: a vote reward's prompts
	// with signal.
	Labeled   float64 `json:"labeled"`
	LabelAcc  float64 `json:"label_accuracy"`
	VoteMixed float64 `json:"vote_mixed"`
}

// SignalOf measures r's signal, its samples labelled by labeller's vote
// (r itself for self-vote; a peer's evaluation on the same problems for
// Co-RL's peer reward). Both must be evaluated with Samples > 1.
func SignalOf(r, labeller Result) (Signal, error) {
	if r.Samples < 2 || labeller.Samples < 2 {
		return Signal{}, fmt.Errorf("signal check: needs 2 or more samples per problem (--samples), have %d", min(r.Samples, labeller.Samples))
	}
	if len(r.SampleAnswers) != len(labeller.SampleAnswers) || len(r.Truth) != len(r.SampleAnswers) {
		return Signal{}, fmt.Errorf("signal check: %d problems against the labeller's %d", len(r.SampleAnswers), len(labeller.SampleAnswers))
	}
	s := Signal{Samples: r.Samples}
	var labeled, right float64
	for i, answers := range r.SampleAnswers {
		if c := r.SampleCorrect[i]; c > 0 && c < r.Samples {
			s.Mixed++
		}
		label, _, tie := datasets.MostCommon(labeller.SampleAnswers[i])
		if tie || label == "" {
			continue
		}
		labeled++
		if label == r.Truth[i] {
			right++
		}
		agree := 0
		for _, a := range answers {
			if a == label {
				agree++
			}
		}
		if agree > 0 && agree < len(answers) {
			s.VoteMixed++
		}
	}
	if n := float64(len(r.SampleAnswers)); n > 0 {
		s.Mixed, s.VoteMixed, s.Labeled = s.Mixed/n, s.VoteMixed/n, labeled/n
	}
	if labeled > 0 {
		s.LabelAcc = right / labeled
	}
	return s, nil
}

// lowSignal is the share of prompts with signal below which a run is
// unlikely to learn in a few dozen rounds.
const lowSignal = 0.10

// Advice is a plain warning for each way s is too weak to learn from,
// with what to try; none when it is not.
func (s Signal) Advice(vote string) []string {
	var out []string
	try := "try longer pretraining (corl pretrain --steps), worked solutions (--solution-field), an easier subset (--max-level, or fewer hard rows), or more samples per prompt (generation.num_generations)"
	if s.Mixed < lowSignal {
		out = append(out, fmt.Sprintf("only %.0f%% of problems have samples both right and wrong: ground-truth RL has little to learn from, and so has every label-free method; %s", 100*s.Mixed, try))
	}
	switch {
	case s.Labeled == 0:
		out = append(out, fmt.Sprintf("the %s labels no problem (no unique plurality answer): a vote reward gives no signal; %s", vote, try))
	case s.LabelAcc < 0.5:
		out = append(out, fmt.Sprintf("the %s's labels are right on only %.0f%% of the problems it labels: a vote reward would teach errors more often than answers", vote, 100*s.LabelAcc))
	case s.VoteMixed < lowSignal:
		out = append(out, fmt.Sprintf("only %.0f%% of problems have samples both agreeing and disagreeing with the %s: a vote reward has little to learn from; %s", 100*s.VoteMixed, vote, try))
	}
	return out
}
