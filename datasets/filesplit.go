package datasets

import (
	"fmt"
	"strings"
)

// File splits. A user's file is split as corl's tasks are: each row goes to
// one of five sets by a hash of the data seed and its prompt's text
// (whitespace collapsed), the same buckets and shares as Task.Split:
// pretrain 65%, pretrain-val 5%, RL 20%, validation 3%, test 7%. So a base
// pretrained on a file (corl pretrain --file) never saw the rows that RL
// trains on or that evaluation scores, and two rows with one prompt share a
// set.
const (
	SetPretrain    = 0
	SetPretrainVal = 1
	SetRL          = 2
	SetValidation  = 3
	SetTest        = 4
)

// SetNames are the sets' names, by index.
var SetNames = [...]string{"pretrain", "pretrain-val", "rl", "validation", "test"}

// FileSet returns the rows of ds in set (SetPretrain ... SetTest; -1: all
// rows) under seed, as problems (Task = the file's name), in file order.
func FileSet(ds *Dataset, seed uint64, set int) []Problem {
	var out []Problem
	for i, p := range ds.Prompts {
		if set >= 0 && bucket(seed, rowKey(p.Text)) != set {
			continue
		}
		a, _ := ds.Labels.Answer(i)
		q := Problem{ID: p.ID, Task: ds.Name, Prompt: p.Text, Answer: a}
		if i < len(ds.Solutions) {
			q.Solution = ds.Solutions[i]
		}
		out = append(out, q)
	}
	return out
}

// FileSetByName is FileSet for a set named as in SetNames, or "test".
func FileSetByName(ds *Dataset, seed uint64, name string) ([]Problem, error) {
	for i, n := range SetNames {
		if n == name {
			return FileSet(ds, seed, i), nil
		}
	}
	return nil, fmt.Errorf("split %q is not one of %s", name, strings.Join(SetNames[:], ", "))
}

func rowKey(prompt string) string { return strings.Join(strings.Fields(prompt), " ") }

// CompletionText is what a base is pretrained to write for p: its worked
// solution, ending "The answer is X." (added when the solution does not
// give it), or that sentence alone when there is no solution.
func CompletionText(p Problem) string {
	final := "The answer is " + p.Answer + "."
	sol := strings.TrimSpace(p.Solution)
	switch {
	case sol == "":
		return final
	case strings.Contains(strings.ToLower(sol), "the answer is") || strings.Contains(sol, `\boxed{`):
		return sol
	default:
		return sol + " " + final
	}
}
