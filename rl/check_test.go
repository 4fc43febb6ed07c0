package rl

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/corl-project/corl/checker"
)

// lowerChecker keys a response by its last word, lowercased ("" none), and
// says correct when shown a label and the key equals the label's; it
// records what it was shown.
type lowerChecker struct{ seen []checker.Item }

func (l *lowerChecker) run(_ context.Context, items []checker.Item) ([]checker.Verdict, error) {
	l.seen = append(l.seen, items...)
	last := func(s string) string {
		f := strings.Fields(strings.ToLower(s))
		if len(f) == 0 {
			return ""
		}
		return strings.Trim(f[len(f)-1], ".")
	}
	vs := make([]checker.Verdict, len(items))
	for i, it := range items {
		k := last(it.Response)
		if k != "" {
			vs[i].AnswerKey = &k
		}
		if it.Answer != "" {
			ok := k == last(it.Answer)
			vs[i].Correct = &ok
		}
	}
	return vs, nil
}

func wordRollouts() ([]Prompt, []Rollout, [][]Group) {
	prompts := []Prompt{
		{ID: "a", Views: []string{"capital of France?", "France's capital?"}, Label: "Paris", Truth: "paris"},
		{ID: "b", Views: []string{"largest planet?", "biggest planet?"}, Label: "Jupiter", Truth: "jupiter"},
	}
	texts := [][][]string{
		{{"It is PARIS.", "paris", "Lyon"}, {"Jupiter.", "saturn", ""}},
		{{"Paris", "lyon", "LYON."}, {"JUPITER", "Jupiter", "no idea"}},
	}
	ros := make([]Rollout, len(texts))
	groups := make([][]Group, len(texts))
	for i, m := range texts {
		ros[i] = make(Rollout, len(m))
		for p, row := range m {
			ros[i][p] = make([]Completion, len(row))
			for k, tx := range row {
				// The built-in rule found nothing in word answers.
				ros[i][p][k] = Completion{Text: tx, Answer: ""}
			}
		}
		groups[i] = ros[i].Groups()
	}
	return prompts, ros, groups
}

// TestCheckKeysAnswersForVotes: the checker's keys replace the answers
// that votes and rewards compare, so "It is PARIS." and "paris" vote
// together; a label-free reward never shows the checker a label, while
// the label itself is keyed for the diagnostics' truth; each member's
// samples are shown in the wording that member saw.
func TestCheckKeysAnswersForVotes(t *testing.T) {
	prompts, ros, groups := wordRollouts()
	c := &lowerChecker{}
	if err := Check(context.Background(), c.run, prompts, []int{0, 1}, ros, groups, false); err != nil {
		t.Fatal(err)
	}
	for _, it := range c.seen {
		if it.Answer != "" {
			t.Fatalf("a label-free reward showed the checker a label: %+v", it)
		}
	}
	if got := c.seen[6].Prompt; got != "France's capital?" {
		t.Errorf("member 1 saw its rephrased prompt, the checker got %q", got)
	}
	if got := []string{groups[0][0][0].Answer, groups[0][0][1].Answer, groups[0][0][2].Answer, groups[0][1][2].Answer}; strings.Join(got, ",") != "paris,paris,lyon," {
		t.Errorf("keys %q", got)
	}
	if ros[1][0][2].Answer != "lyon" || prompts[0].Truth != "paris" || prompts[1].Truth != "jupiter" {
		t.Errorf("rollout key %q, truths %q %q", ros[1][0][2].Answer, prompts[0].Truth, prompts[1].Truth)
	}
	out, err := NewStrategy(SelfVote)
	if err != nil {
		t.Fatal(err)
	}
	res, err := out.Reward(Input{Rollouts: groups})
	if err != nil {
		t.Fatal(err)
	}
	if v := res.Labels[0][0]; v.Answer != "paris" || !v.Labeled {
		t.Errorf("member 0's vote on prompt a: %+v (two of three say Paris)", v)
	}
	if r := res.Rewards[0][0]; r[0] != 1 || r[1] != 1 || r[2] != 0 {
		t.Errorf("rewards %v", r)
	}
}

// TestCheckCorrectDecidesGroundTruth: under the ground-truth reward the
// checker sees the label, and its correct overrides the keys: a response
// it calls right earns the label's reward whatever its key, one it calls
// wrong never does, even with the label's key.
func TestCheckCorrectDecidesGroundTruth(t *testing.T) {
	prompts, ros, groups := wordRollouts()
	run := func(_ context.Context, items []checker.Item) ([]checker.Verdict, error) {
		vs := make([]checker.Verdict, len(items))
		for i, it := range items {
			k := "same"
			vs[i].AnswerKey = &k
			if it.Answer != "" {
				ok := strings.Contains(strings.ToLower(it.Response), strings.ToLower(it.Answer))
				vs[i].Correct = &ok
			}
		}
		return vs, nil
	}
	if err := Check(context.Background(), run, prompts, []int{0, 0}, ros, groups, true); err != nil {
		t.Fatal(err)
	}
	gt, err := StrategyFor(Config{Reward: GroundTruthRL}, prompts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := gt.Reward(Input{Rollouts: groups})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{1, 1, 0}, {1, 0, 0}}
	for p := range want {
		for k := range want[p] {
			if res.Rewards[0][p][k] != want[p][k] {
				t.Fatalf("member 0 rewards %v, want %v", res.Rewards[0], want)
			}
		}
	}
}

// TestCheckFailuresAreTheRounds: a checker's error ends the check, and
// one that answers too few rows is refused.
func TestCheckFailuresAreTheRounds(t *testing.T) {
	prompts, ros, groups := wordRollouts()
	boom := errors.New("checker x: exit status 2")
	if err := Check(context.Background(), func(context.Context, []checker.Item) ([]checker.Verdict, error) { return nil, boom }, prompts, []int{0, 0}, ros, groups, false); !errors.Is(err, boom) {
		t.Errorf("error %v", err)
	}
	short := func(context.Context, []checker.Item) ([]checker.Verdict, error) {
		return make([]checker.Verdict, 3), nil
	}
	if err := Check(context.Background(), short, prompts, []int{0, 0}, ros, groups, false); err == nil {
		t.Error("three verdicts for fourteen rows were taken")
	}
}
