package cli

import (
	"testing"

	"github.com/corl-project/corl/workflows"
)

// TestPaperTableSweep: the committed comparison sweep loads, every cell
// validates, and its methods set what their names say.
func TestPaperTableSweep(t *testing.T) {
	in, err := LoadSweep("../examples/paper-table.yaml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	specs, labels, err := workflows.Cells(*in)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 30 {
		t.Fatalf("%d cells, want 10 methods x 3 seeds", len(specs))
	}
	for i, s := range specs {
		if s.Eval.Split != "test" || s.Eval.Size < 500 || s.Members[0].Name != "llama-odd" {
			t.Errorf("cell %d (%s): split %s size %d first member %s", i, labels[i], s.Eval.Split, s.Eval.Size, s.Members[0].Name)
		}
	}
	last := specs[len(specs)-1]
	if last.Reward.Mode != "self-vote" || last.MaxFLOPs <= 0 || len(last.Members) != 1 || last.Seed != 3 || last.PromptsPerRound != 256 {
		t.Errorf("compute-matched cell with more prompts: %+v", last)
	}
	g16 := specs[len(specs)-2]
	if g16.Generation.NumGenerations != 16 || g16.MaxFLOPs <= 0 || g16.Rounds != 20 {
		t.Errorf("compute-matched cell with more samples: %+v", g16)
	}
}
