package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/report"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/workflows"
)

// TestRecordedCellsMatchBySpec: the cells whose spec a results
// directory's records hold are the ones left out; a record of another
// spec (another learning rate), or one read before it completed, leaves
// its cell to run.
func TestRecordedCellsMatchBySpec(t *testing.T) {
	base := spec.Default()
	base.Members = []spec.Member{{Name: "m", Base: "blob:bases/abc"}}
	in := workflows.SweepInput{Name: "s", Base: base, Grid: []workflows.Axis{
		{Key: "seed", Values: []json.RawMessage{json.RawMessage("1"), json.RawMessage("2")}},
		{Key: "reward.mode", Values: []json.RawMessage{json.RawMessage(`"self-vote"`), json.RawMessage(`"entropy"`)}},
	}}
	specs, _, err := workflows.Cells(in)
	if err != nil {
		t.Fatal(err)
	}
	other := specs[0]
	other.Optim.LearningRate *= 2
	var runs []*report.Run
	for _, s := range []spec.RunSpec{specs[1], specs[3], other} {
		runs = append(runs, &report.Run{Spec: s, Evals: []record.Eval{{Round: 0}}, Complete: true})
	}
	// A run read while in progress leaves its cell to run.
	runs = append(runs, &report.Run{Spec: specs[2], Evals: []record.Eval{{Round: 0}}})
	dir := t.TempDir()
	if err := report.SaveRecords(filepath.Join(dir, report.RecordsName), runs); err != nil {
		t.Fatal(err)
	}
	got, err := recordedCells(in, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("recorded cells %v, want [1 3]", got)
	}
	if _, err := recordedCells(in, filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing records file was accepted")
	}
}

// TestReportCompleteOnly: --complete leaves out runs read before they
// completed, so a sweep in progress commits only its finished cells.
func TestReportCompleteOnly(t *testing.T) {
	base := spec.Default()
	base.Members = []spec.Member{{Name: "m", Base: "b"}}
	ev := func(round int) record.Eval {
		return record.Eval{Round: round, Members: map[string]evaluate.Result{"m": {N: 2, PassAt1: 0.5, Correct: []bool{true, false}}}}
	}
	var runs []*report.Run
	for seed, complete := range map[uint64]bool{1: true, 2: false, 3: true} {
		s := base
		s.Seed = seed
		runs = append(runs, &report.Run{Spec: s, Evals: []record.Eval{ev(0), ev(10)}, Complete: complete})
	}
	dir := t.TempDir()
	if err := report.SaveRecords(filepath.Join(dir, report.RecordsName), runs); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "runs.jsonl.gz")
	code, _, errs := run(t, "report", dir, "--complete", "-o", "", "--records", out)
	if code != 0 || !strings.Contains(errs, "2 of 3 run(s) completed") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	kept, err := report.LoadRecords(out)
	if err != nil || len(kept) != 2 {
		t.Fatalf("kept %d runs (%v), want the 2 complete ones", len(kept), err)
	}
}

// TestReportWhere: --where keeps the runs whose settings match, and refuses
// a condition that is not KEY=REGEXP, a bad expression or a key no run has,
// naming it.
func TestReportWhere(t *testing.T) {
	ev := func(round int) record.Eval {
		return record.Eval{Round: round, Members: map[string]evaluate.Result{"m": {N: 2, PassAt1: 0.5, Correct: []bool{true, false}}}}
	}
	var runs []*report.Run
	for _, mode := range []string{"self-vote", "ground-truth", "self-vote"} {
		s := spec.Default()
		s.Members = []spec.Member{{Name: "m", Base: "b"}}
		s.Reward.Mode = mode
		s.Seed = uint64(len(runs) + 1)
		runs = append(runs, &report.Run{Spec: s, Evals: []record.Eval{ev(0), ev(10)}, Complete: true})
	}
	dir := t.TempDir()
	if err := report.SaveRecords(filepath.Join(dir, report.RecordsName), runs); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "runs.jsonl.gz")
	if code, _, errs := run(t, "report", dir, "--where", "reward.mode=^self-vote$", "-o", "", "--records", out); code != 0 || !strings.Contains(errs, "2 of 3 run(s) match --where") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for arg, want := range map[string]string{"reward.mode": "want KEY=REGEXP", "reward.mode=(": "--where reward.mode", "reward.mdoe=x": `no run has a setting "reward.mdoe"`} {
		if code, _, errs := run(t, "report", dir, "--where", arg, "-o", ""); code == 0 || !strings.Contains(errs, want) {
			t.Errorf("--where %s: exit %d, stderr %q, want %q", arg, code, errs, want)
		}
	}
	if code, _, errs := run(t, "report", dir, "--where", "reward.mode=self", "--where", "reward.mode=peer", "-o", ""); code == 0 || !strings.Contains(errs, "--where reward.mode: given twice") {
		t.Errorf("a key given twice: exit %d, stderr %q", code, errs)
	}
}
