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
	if len(specs) != 50 {
		t.Fatalf("%d cells, want 10 methods x 5 seeds", len(specs))
	}
	for i, s := range specs {
		if s.Eval.Split != "test" || s.Eval.Size < 500 || s.Members[0].Name != "llama-odd" {
			t.Errorf("cell %d (%s): split %s size %d first member %s", i, labels[i], s.Eval.Split, s.Eval.Size, s.Members[0].Name)
		}
	}
	last := specs[len(specs)-1]
	if last.Reward.Mode != "self-vote" || last.MaxFLOPs <= 0 || len(last.Members) != 1 || last.Seed != 5 || last.PromptsPerRound != 256 {
		t.Errorf("compute-matched cell with more prompts: %+v", last)
	}
	g16 := specs[len(specs)-2]
	if g16.Generation.NumGenerations != 16 || g16.MaxFLOPs <= 0 || g16.Rounds != 20 {
		t.Errorf("compute-matched cell with more samples: %+v", g16)
	}
}

// TestStudySweeps: every committed sweep of the composition and own-task
// studies (and the diversity 2x2's, planned) loads and expands, each cell
// scores the study's member first, and the test sweeps evaluate on the
// test split.
func TestStudySweeps(t *testing.T) {
	for file, want := range map[string]struct {
		member, split string
		cells         int
	}{
		"../examples/composition/tune.yaml":     {"nat-llama", "validation", 20},
		"../examples/composition/test.yaml":     {"nat-llama", "test", 75},
		"../examples/composition/anchors.yaml":  {"llama-odd", "test", 10},
		"../examples/composition/collapse.yaml": {"nat-llama", "test", 3},
		"../examples/own-task/study/tune.yaml":  {"own-llama", "validation", 15},
		"../examples/own-task/study/test.yaml":  {"own-llama", "test", 50},
		"../examples/diversity/test.yaml":       {"nat-llama", "test", 32},
	} {
		in, err := LoadSweep(file, func(string) string { return "" })
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		specs, labels, err := workflows.Cells(*in)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if len(specs) != want.cells {
			t.Errorf("%s: %d cells, want %d", file, len(specs), want.cells)
		}
		for i, s := range specs {
			if s.Members[0].Name != want.member || s.Eval.Split != want.split {
				t.Errorf("%s cell %d (%s): first member %s, split %s", file, i, labels[i], s.Members[0].Name, s.Eval.Split)
			}
		}
	}
}
