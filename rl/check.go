package rl

import (
	"context"
	"fmt"

	"github.com/corl-project/corl/checker"
)

// CheckFunc runs a task's checker over a batch of rows (checker.Run, or a
// cached run of it).
type CheckFunc func(ctx context.Context, items []checker.Item) ([]checker.Verdict, error)

// wrongKey keys a response the checker called wrong whose key equals the
// label's: it must not count as the label, and it votes with nothing.
const wrongKey = "\x00wrong:"

// labelKey stands for the label of a prompt whose label the checker gives
// no key (a checker that only says correct or not).
const labelKey = "\x00label"

// CheckItems is the batch the task's checker is shown for a round: every
// sample of every member, as the member saw its prompt, then each prompt's
// label as a response (for its key, the truth that diagnostics and the
// ground-truth reward compare with). Samples carry the label only when
// the reward is ground truth: a label-free reward must not let the label
// reach what it votes on.
func CheckItems(prompts []Prompt, views []int, rollouts []Rollout, withLabels bool) []checker.Item {
	var items []checker.Item
	for i, ro := range rollouts {
		for p, row := range ro {
			for _, cp := range row {
				it := checker.Item{Prompt: prompts[p].view(views[i]), Response: cp.Text}
				if withLabels {
					it.Answer = prompts[p].Label
				}
				items = append(items, it)
			}
		}
	}
	for _, p := range prompts {
		items = append(items, checker.Item{Prompt: p.view(0), Response: p.Label})
	}
	return items
}

// Check re-keys the round's answers with the task's checker: each sample's
// Answer (in rollouts and groups alike) becomes the checker's answer_key
// ("" for none), and each labeled prompt's Truth the key of its label, so
// that votes, rewards and diagnostics all compare the checker's keys.
// Under the ground-truth reward a verdict's correct, when given, decides:
// a response called correct is keyed as the label, one called wrong never
// matches it. Elsewhere correct is not asked for (the samples are shown no
// label).
func Check(ctx context.Context, run CheckFunc, prompts []Prompt, views []int, rollouts []Rollout, groups [][]Group, groundTruth bool) error {
	items := CheckItems(prompts, views, rollouts, groundTruth)
	vs, err := run(ctx, items)
	if err != nil {
		return err
	}
	if len(vs) != len(items) {
		return fmt.Errorf("checker: %d verdicts for %d rows", len(vs), len(items))
	}
	key := func(v checker.Verdict) string {
		if v.AnswerKey == nil {
			return ""
		}
		return *v.AnswerKey
	}
	labels := vs[len(vs)-len(prompts):]
	for p := range prompts {
		if prompts[p].Label == "" {
			prompts[p].Truth = ""
			continue
		}
		prompts[p].Truth = key(labels[p])
		if prompts[p].Truth == "" && groundTruth {
			prompts[p].Truth = labelKey
		}
	}
	n := 0
	for i, ro := range rollouts {
		for p, row := range ro {
			for k := range row {
				v := vs[n]
				n++
				a := key(v)
				if groundTruth && v.Correct != nil && prompts[p].Truth != "" {
					switch {
					case *v.Correct:
						a = prompts[p].Truth
					case a == prompts[p].Truth:
						a = wrongKey + a
					}
				}
				ro[p][k].Answer = a
				if groups != nil {
					groups[i][p][k].Answer = a
				}
			}
		}
	}
	return nil
}
