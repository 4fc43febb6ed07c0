package rl

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/corl-project/corl/record"
)

// groupsVoting is one model's rollout whose prompts' samples all answer as
// given.
func groupsVoting(answers ...string) []Group {
	gs := make([]Group, len(answers))
	for p, a := range answers {
		gs[p] = Group{{Answer: a}, {Answer: a}, {Answer: a}}
	}
	return gs
}

// TestCollapseAcrossPromptsIsSeen: members whose every prompt gets the same
// answer (each prompt's samples agree, so per-prompt entropy is 0 either
// way) are flagged when the labels are varied, and the cohort when they
// share the answer; a task whose right answers are mostly alike is not a
// collapse.
func TestCollapseAcrossPromptsIsSeen(t *testing.T) {
	zero := func(n int) [][]float64 { return make([][]float64, n) }
	out := Output{Rewards: [][][]float64{zero(4), zero(4)}}
	healthy := [][]Group{groupsVoting("1", "2", "3", "4"), groupsVoting("1", "2", "3", "5")}
	collapsed := [][]Group{groupsVoting("yes", "yes", "yes", "no"), groupsVoting("yes", "yes", "yes", "yes")}
	names := []string{"a", "b"}
	if w := Diagnose(healthy, out, []string{"1", "2", "3", "4"}, 0).Collapse(names); len(w) != 0 {
		t.Errorf("a healthy cohort flagged: %q", w)
	}
	d := Diagnose(collapsed, out, []string{"yes", "no", "no", "yes"}, 0)
	if d.Models[1].ModalShare != 1 || d.Models[0].ModalShare != 0.75 || *d.TruthModalShare != 0.5 {
		t.Fatalf("modal shares %+v, truth %v", d.Models, *d.TruthModalShare)
	}
	w := strings.Join(d.Collapse(names), "\n")
	for _, want := range []string{`member a: 75% of the round's prompts vote one answer ("yes"`, "member b: 100%", "the cohort has collapsed onto one answer"} {
		if !strings.Contains(w, want) {
			t.Errorf("collapse warnings %q lack %q", w, want)
		}
	}
	if w := Diagnose(collapsed, out, []string{"yes", "yes", "yes", "yes"}, 0).Collapse(names); len(w) != 0 {
		t.Errorf("answers as alike as the labels flagged: %q", w)
	}
	if !d.Flagged(0) || !d.Flagged(1) || Diagnose(healthy, out, []string{"1", "2", "3", "4"}, 0).Flagged(0) {
		t.Error("Flagged disagrees with the across-prompts rule")
	}
}

// TestConsensusCollapseIsSeen: two members converging on the same wrong
// answers, prompt by prompt and with varied answers (so no single answer
// dominates and the across-prompts rule stays quiet), are flagged once
// they agree on nearly every prompt while their labels are mostly wrong;
// not before, while they still disagree, and not a pair that agrees
// because both are right.
func TestConsensusCollapseIsSeen(t *testing.T) {
	truth := []string{"11", "12", "13", "14", "15", "16", "17", "18", "19", "20"}
	peer, err := NewStrategy(PeerRing)
	if err != nil {
		t.Fatal(err)
	}
	diag := func(a, b []string) record.Diagnostics {
		g := [][]Group{groupsVoting(a...), groupsVoting(b...)}
		out, err := peer.Reward(Input{Rollouts: g})
		if err != nil {
			t.Fatal(err)
		}
		return Diagnose(g, out, truth, 0)
	}
	names := []string{"a", "b"}
	wrong := []string{"1", "2", "3", "4", "5", "6", "7", "8", "19", "20"} // right on two of ten
	early := diag(wrong, []string{"1", "12", "3", "14", "15", "6", "17", "18", "19", "20"})
	if w := early.Collapse(names); len(w) != 0 {
		t.Errorf("members that still disagree flagged: %q", w)
	}
	late := diag(wrong, wrong)
	b, _ := json.Marshal(late) // as the workflow receives it from the grade
	var sent record.Diagnostics
	if err := json.Unmarshal(b, &sent); err != nil {
		t.Fatal(err)
	}
	w := strings.Join(sent.Collapse(names), "\n")
	if !strings.Contains(w, "members a and b: they vote the same answer on 100% of the round's prompts, and the labels they give are right on 20%") {
		t.Errorf("consensus on shared errors not seen: %q", w)
	}
	if strings.Contains(w, "member a:") {
		t.Errorf("the across-prompts rule fired on varied answers: %q", w)
	}
	if w := diag(truth, truth).Collapse(names); len(w) != 0 {
		t.Errorf("a pair agreeing because both are right flagged: %q", w)
	}
	if !sent.Flagged(0) || !sent.Flagged(1) || early.Flagged(0) || diag(truth, truth).Flagged(1) || sent.Flagged(2) {
		t.Error("Flagged disagrees with the consensus rule")
	}
}
