package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/corl-project/corl/report"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/train"
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
		runs = append(runs, &report.Run{Spec: s, Evals: []train.EvalResult{{Round: 0}}, Complete: true})
	}
	// A run read while in progress leaves its cell to run.
	runs = append(runs, &report.Run{Spec: specs[2], Evals: []train.EvalResult{{Round: 0}}})
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
