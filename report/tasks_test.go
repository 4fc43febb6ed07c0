package report

import (
	"math"
	"strings"
	"testing"

	"github.com/corl-project/corl/cohort"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/rl"
	"github.com/corl-project/corl/spec"
)

// TestGainsByTask: a method's gain on each task family is paired on that
// family's problems alone, the problems' tasks rebuilt from the spec; a
// record whose per-task scores do not fit the rebuilt problems (another
// order, or another data set) gets no per-task gains rather than wrong
// ones.
func TestGainsByTask(t *testing.T) {
	s := spec.Default()
	s.Data.Tasks, s.Data.RLSize, s.Data.MaxLevel, s.Eval.Size = []string{"arith", "mod"}, 8, 1, 3
	d, err := cohort.LoadData(&s)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for _, p := range d.Eval {
		tasks = append(tasks, p.Task)
	}
	if strings.Join(tasks, ",") != "arith,arith,arith,mod,mod,mod" {
		t.Fatalf("rebuilt tasks %v", tasks)
	}
	res := func(right []bool) evaluate.Result {
		r := evaluate.Result{N: len(right), Correct: right, ByTask: map[string]float64{"arith": 0, "mod": 0}}
		for i, c := range right {
			if c {
				r.ByTask[tasks[i]] += 1.0 / 3
				r.PassAt1 += 1.0 / 6
			}
		}
		return r
	}
	run := func(seed uint64, before, after []bool) *Run {
		r := &Run{Spec: s}
		r.Spec.Seed, r.Spec.Reward.Mode = seed, rl.GroundTruthRL
		r.Spec.Members = []spec.Member{{Name: "a", Base: "base-a"}}
		r.Evals = []record.Eval{{Round: 0, Members: map[string]evaluate.Result{"a": res(before)}},
			{Round: 2, Members: map[string]evaluate.Result{"a": res(after)}}}
		return r
	}
	f, T := false, true
	rs := []*Run{
		run(1, []bool{f, f, T, f, T, f}, []bool{T, T, T, f, T, f}), // arith +2/3, mod 0
		run(2, []bool{f, f, f, T, f, f}, []bool{T, f, f, T, f, f}), // arith +1/3, mod 0
	}
	tb := BuildTable(rs, "a")
	gt := tb.Rows[1]
	if gt.GainByTask == nil {
		t.Fatal("no per-task gains")
	}
	if g := gt.GainByTask["arith"]; g == nil || math.Abs(g.Diff.Mean-0.5) > 1e-12 || g.Problems != 3 {
		t.Errorf("arith gain %+v, want +0.5 over its 3 problems", g)
	}
	if g := gt.GainByTask["mod"]; g == nil || g.Diff.Mean != 0 {
		t.Errorf("mod gain %+v, want 0", g)
	}
	if md := tb.Markdown(); !strings.Contains(md, "| method | gain on arith | gain on mod |") || !strings.Contains(md, "| Ground-truth | +0.500 [") {
		t.Errorf("Markdown lacks the per-task gains:\n%s", md)
	}
	// Recorded with the two families in the other order: the scores do
	// not fit the rebuilt problems.
	for _, r := range rs {
		for _, e := range r.Evals {
			m := e.Members["a"]
			m.ByTask = map[string]float64{"arith": m.ByTask["mod"], "mod": m.ByTask["arith"]}
			e.Members["a"] = m
		}
	}
	if g := BuildTable(rs, "a").Rows[1].GainByTask; g != nil {
		t.Errorf("per-task gains %v from records that do not fit the rebuilt problems", g)
	}
}
