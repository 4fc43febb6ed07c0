package report

import (
	"math"
	"strings"
	"testing"

	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/stats"
)

// TestAtRoundScoresTheRunThere: a run evaluated at rounds 0, 2 and 4 is
// scored at round 2 with its round-2 outcomes, its compute up to round 2
// and its collapse diagnostics up to round 2; the run given is unchanged,
// and a round it was not evaluated at is an error naming the run.
func TestAtRoundScoresTheRunThere(t *testing.T) {
	res := func(right ...int) evaluate.Result {
		r := evaluate.Result{N: len(right), Samples: 2, SampleCorrect: right, Correct: make([]bool, len(right)),
			ByTask: map[string]float64{"mod": 0}, SampledByTask: map[string]float64{}}
		for i, c := range right {
			r.SampledPassAt1 += float64(c) / 2 / float64(len(right))
			r.Correct[i] = c == 2
		}
		r.SampledByTask["mod"] = r.SampledPassAt1
		r.SampledCI = &stats.Interval{Mean: r.SampledPassAt1, Lo: r.SampledPassAt1, Hi: r.SampledPassAt1}
		return r
	}
	r := &Run{Spec: spec.Default()}
	r.Spec.Name, r.Spec.Seed, r.Spec.Members = "sv", 1, []spec.Member{{Name: "a", Base: "base-a"}}
	for i, right := range [][]int{{0, 1, 1, 0}, {2, 1, 1, 0}, {2, 2, 2, 2}} {
		r.Evals = append(r.Evals, record.Eval{Round: 2 * i, Members: map[string]evaluate.Result{"a": res(right...)}})
	}
	for round := range 4 {
		d := record.ModelDiag{AnswerEntropy: float64(4 - round), DistinctAnswers: 3}
		if round == 3 {
			d.ModalShare = 0.9 // flagged, but only after round 2
		}
		r.Rounds = append(r.Rounds, record.Round{Round: round, Models: []record.ModelRound{{GenSeconds: 1, UpdateSeconds: 2}},
			Diag: record.Diagnostics{Models: []record.ModelDiag{d}}})
	}
	at, err := AtRound([]*Run{r}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Evals) != 3 || len(r.Rounds) != 4 {
		t.Fatalf("the run given was changed: %d evaluations, %d rounds", len(r.Evals), len(r.Rounds))
	}
	if got := at[0]; len(got.Evals) != 2 || got.Evals[1].Round != 2 || len(got.Rounds) != 2 || got.Seconds() != 6 {
		t.Fatalf("at round 2: evaluations %d (last at %d), rounds %d, seconds %v; want 2, 2, 2, 6", len(got.Evals), got.Evals[len(got.Evals)-1].Round, len(got.Rounds), got.Seconds())
	}
	tb := BuildTable(at, "a")
	row := tb.Rows[len(tb.Rows)-1]
	// Round 2's samples: 4/8 right against the base's 2/8, paired: +0.25.
	if math.Abs(row.Average.Mean-0.5) > 1e-12 || row.Gain == nil || math.Abs(row.Gain.Diff.Mean-0.25) > 1e-12 {
		t.Errorf("row at round 2: %v, gain %+v; want 0.5 and +0.25", row.Average.Mean, row.Gain)
	}
	if c := row.Collapse; c == nil || c.EntropyLast != 3 || c.Flagged != 0 {
		t.Errorf("collapse at round 2 %+v: want the last entropy 3 (round 1's) and no flagged run", c)
	}
	if full := BuildTable([]*Run{r}, "a").Rows[1]; full.Average.Mean != 1 || full.Collapse.Flagged != 1 {
		t.Errorf("the whole run: %v, %+v; want 1 and the flagged run", full.Average.Mean, full.Collapse)
	}
	if _, err := AtRound([]*Run{r}, 3); err == nil || !strings.Contains(err.Error(), "sv") || !strings.Contains(err.Error(), "[0 2 4]") {
		t.Errorf("round 3: %v; want an error naming run sv and its rounds [0 2 4]", err)
	}
}
