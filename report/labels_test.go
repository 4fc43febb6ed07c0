package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/spec"
)

// Arms of one reward that a sweep varied are named by what it varied, not
// by the name the sweep's cells share.
func TestLabelsNameWhatArmsVary(t *testing.T) {
	run := func(mode string, rounds int, members ...spec.Member) *Run {
		return &Run{Spec: spec.RunSpec{Name: "study", Rounds: rounds, Reward: spec.Reward{Mode: mode}, Members: members},
			Families: map[string]string{"zoo/llama-a": "llama", "zoo/llama-b": "llama"}}
	}
	m := spec.Member{Name: "m", Base: "zoo/llama-a"}
	copyOf := spec.Member{Name: "m-copy", Base: "zoo/llama-a"}
	other := spec.Member{Name: "peer", Base: "zoo/llama-b"}
	frozen := other
	frozen.Frozen = true
	got := labels([]*Run{
		run("self-vote", 20, m),
		run("ground-truth", 20, m),
		run("peer-ring", 20, m, copyOf),
		run("peer-ring", 20, m, other),
		run("peer-ring", 20, m, frozen),
		run("self-vote", 60, m),
	})
	want := []string{
		"Self-vote (TTRL) — rounds 20",
		"Ground-truth",
		"Co-RL same family (peer-ring) — members m + m-copy",
		"Co-RL same family (peer-ring) — members m + peer",
		"Co-RL same family (peer-ring) — members m + peer (frozen)",
		"Self-vote (TTRL) — rounds 60",
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("label %d = %q, want %q", i, got[i], want[i])
		}
	}
	// Runs alike in every setting that counts keep the name they share.
	if got := labels([]*Run{run("self-vote", 20, m), run("self-vote", 20, m)}); got[0] != "Self-vote (TTRL) — study" {
		t.Errorf("identical settings: %q", got[0])
	}
}

func TestWhereKeepsMatchingRunsAndNamesUnknownKeys(t *testing.T) {
	run := func(mode string, members ...string) *Run {
		r := &Run{Spec: spec.RunSpec{Reward: spec.Reward{Mode: mode}}}
		for _, m := range members {
			r.Spec.Members = append(r.Spec.Members, spec.Member{Name: m})
		}
		return r
	}
	runs := []*Run{run("self-vote", "m"), run("peer-ring", "m", "p"), run("peer-ring", "m", "p", "q"), run("peer-ring", "x", "p")}
	kept, err := Where(runs, map[string]*regexp.Regexp{"members": regexp.MustCompile(`^m \+ [^+]+$`)})
	if err != nil || len(kept) != 1 || kept[0] != runs[1] {
		t.Fatalf("two-member cohorts of m: %v %v", kept, err)
	}
	kept, err = Where(runs, map[string]*regexp.Regexp{"reward.mode": regexp.MustCompile(`^peer-ring$`), "members": regexp.MustCompile(`^m `)})
	if err != nil || len(kept) != 2 {
		t.Fatalf("both conditions: %d runs, %v", len(kept), err)
	}
	if _, err := Where(runs, map[string]*regexp.Regexp{"reward.mdoe": regexp.MustCompile(`.`)}); err == nil || !strings.Contains(err.Error(), "reward.mdoe") {
		t.Fatalf("a misspelt key: %v", err)
	}
}

func TestMemberListScoresEachRunsOwnModel(t *testing.T) {
	run := func(members ...string) *Run {
		e := record.Eval{Members: map[string]evaluate.Result{}}
		for _, m := range members {
			e.Members[m] = evaluate.Result{}
		}
		return &Run{Evals: []record.Eval{e}}
	}
	for _, c := range []struct {
		run  *Run
		want string
	}{{run("m", "p"), "m"}, {run("odd", "even"), "odd"}, {run("p", "q"), ""}} {
		if got := scoredMember(c.run, "m, odd"); got != c.want {
			t.Errorf("members %v: scored %q, want %q", memberNames(c.run.Evals[0]), got, c.want)
		}
	}
}

func TestBaseLabel(t *testing.T) {
	for in, want := range map[string]string{
		"examples/zoo/nat-llama": "nat-llama",
		"blob:uploads/2470a2dbb6a337338be45206b90c99b7623304bcb9f3bcb3e1d33f0a8b8ab944/manifest.json": "blob 2470a2dbb6a3",
	} {
		if got := baseLabel(in); got != want {
			t.Errorf("baseLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
