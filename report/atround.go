package report

import (
	"fmt"
	"slices"

	"github.com/corl-project/corl/record"
)

// AtRound returns the runs as they stood at round n: each run's
// evaluations up to the one at round n, which becomes its last, and its
// round records before it, so the table, the contrasts, FLOPs, seconds and
// the collapse diagnostics all read the run at round n (a study's lead
// at round 20 of runs that went on to 100). A run without an evaluation
// at round n is an error naming it and the rounds it has. The runs given
// are not changed.
func AtRound(runs []*Run, n int) ([]*Run, error) {
	if n < 0 {
		return nil, fmt.Errorf("round %d: want 0 or more", n)
	}
	out := make([]*Run, 0, len(runs))
	for _, r := range runs {
		i := slices.IndexFunc(r.Evals, func(e record.Eval) bool { return e.Round == n })
		if i < 0 {
			have := make([]int, len(r.Evals))
			for j, e := range r.Evals {
				have[j] = e.Round
			}
			return nil, fmt.Errorf("run %s (%s, seed %d) has no evaluation at round %d (it has %v)", r.Spec.Name, r.Method(), r.Spec.Seed, n, have)
		}
		c := *r
		c.Evals = r.Evals[: i+1 : i+1]
		c.Rounds = slices.DeleteFunc(slices.Clone(r.Rounds), func(x record.Round) bool { return x.Round >= n })
		out = append(out, &c)
	}
	return out, nil
}
