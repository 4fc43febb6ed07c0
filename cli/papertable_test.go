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
	if len(specs) != 24 {
		t.Fatalf("%d cells", len(specs))
	}
	for i, s := range specs {
		if s.Eval.Split != "test" || s.Eval.Size < 500 || s.Members[0].Name != "llama-odd" {
			t.Errorf("cell %d (%s): split %s size %d first member %s", i, labels[i], s.Eval.Split, s.Eval.Size, s.Members[0].Name)
		}
	}
	last := specs[len(specs)-1]
	if last.Reward.Mode != "self-vote" || last.MaxFLOPs <= 0 || len(last.Members) != 1 || last.Seed != 3 {
		t.Errorf("compute-matched cell: %+v", last)
	}
}
