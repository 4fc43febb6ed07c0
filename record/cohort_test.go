package record

import (
	"math"
	"strings"
	"testing"
)

func TestWarningsNameMembersWithoutSignal(t *testing.T) {
	d := Diagnostics{Models: []ModelDiag{{ZeroVarFrac: 0.95, LabeledFrac: 0.1}, {ZeroVarFrac: 0.3}}}
	w := d.Warnings([]string{"a", "b"})
	if len(w) != 1 || !strings.Contains(w[0], "member a: 95% of the round's prompts") || !strings.Contains(w[0], "corl eval --samples") {
		t.Errorf("warnings %q", w)
	}
}

func TestKappaAndComplementarity(t *testing.T) {
	T, F := true, false
	for _, tc := range []struct {
		a, b        []bool
		kappa, comp float64
	}{
		// po = 3/4; pa = 1/2, pb = 1/4: pe = 1/8 + 3/8 = 1/2; kappa = (3/4 - 1/2)/(1/2) = 1/2
		{[]bool{T, T, F, F}, []bool{T, F, F, F}, 0.5, 0.25},
		{[]bool{T, F, T, F}, []bool{T, F, T, F}, 1, 0},
		// opposite: po = 0, pe = 1/2 -> -1
		{[]bool{T, F}, []bool{F, T}, -1, 1},
		// both always right: chance agreement total -> 1
		{[]bool{T, T}, []bool{T, T}, 1, 0},
	} {
		if k := CohenKappa(tc.a, tc.b); math.Abs(k-tc.kappa) > 1e-12 {
			t.Errorf("kappa(%v, %v) = %v, want %v", tc.a, tc.b, k, tc.kappa)
		}
		if c := Complementarity(tc.a, tc.b); math.Abs(c-tc.comp) > 1e-12 {
			t.Errorf("complementarity(%v, %v) = %v, want %v", tc.a, tc.b, c, tc.comp)
		}
	}
}

func TestCohortVote(t *testing.T) {
	greedy := func(answers ...string) [][]string {
		out := make([][]string, len(answers))
		for i, a := range answers {
			out[i] = []string{a}
		}
		return out
	}
	answers := [][][]string{
		greedy("1", "2", "", "4", ""),
		greedy("1", "3", "", "5", ""),
		greedy("7", "3", "9", "5", ""),
	}
	truth := []string{"1", "2", "9", "4", "0"}
	right := func(p int, a string) bool { return a == truth[p] }
	// pluralities: 1 (right), 3 (wrong), 9 (right: the only parseable vote), 5 (wrong), none
	if got := CohortVote(answers, right); got != (CohortResult{Correct: 0.4, NoAnswer: 0.2}) {
		t.Errorf("cohort vote %+v", got)
	}
	// Two members that disagree tie: a tie, never "12" over "7" by spelling.
	two := [][][]string{{{"12"}}, {{"7"}}}
	if got := CohortVote(two, func(_ int, a string) bool { return a == "7" }); got != (CohortResult{Tie: 1}) {
		t.Errorf("two disagreeing members: %+v, want a tie", got)
	}
	// Samples are pooled: maj@(N x k).
	pooled := [][][]string{{{"7", "12", "7"}}, {{"12", "", "7"}}}
	if got := CohortVote(pooled, func(_ int, a string) bool { return a == "7" }); got != (CohortResult{Correct: 1}) {
		t.Errorf("pooled samples: %+v", got)
	}
}

// TestPredictCountsRescuesAndSharedErrors: on five problems whose right
// answer is "r", A's votes are right on two, B's on three; B's vote is
// right on two of A's three misses, A's on one of B's two; both vote the
// same wrong answer on one problem and the same right one on another
// (agreement 2 of 5); a tied pool is no vote.
func TestPredictCountsRescuesAndSharedErrors(t *testing.T) {
	a := [][]string{{"r", "r", "x"}, {"r"}, {"x"}, {"y", "z"}, {"w"}}
	b := [][]string{{"x"}, {"r"}, {"r"}, {"r"}, {"w", "w", "r"}}
	right := func(_ int, s string) bool { return s == "r" }
	pp := Predict(a, b, []bool{true, true, false, false, false}, []bool{false, true, true, true, false}, right)
	agreement := 2.0 / 5
	want := PairPredictors{RescueAB: 2.0 / 3, RescueBA: 1.0 / 2, SharedError: 1.0 / 5, AccA: 2.0 / 5, AccB: 3.0 / 5, Agreement: &agreement}
	pp.Kappa, pp.Complementarity = 0, 0
	if pp.Agreement == nil || *pp.Agreement != agreement {
		t.Errorf("agreement %v, want %v", pp.Agreement, agreement)
	}
	pp.Agreement = want.Agreement
	if pp != want {
		t.Errorf("predictors %+v, want %+v", pp, want)
	}
}

// TestAZeroAgreementThatCannotBeMeasuredIsForgotten: a saved agreement of
// 0 beside a shared error, or beside vote accuracies summing past 1, is
// the 0 of a record made before agreement was measured, and goes missing;
// a 0 the other numbers allow, and any other value, stay.
func TestAZeroAgreementThatCannotBeMeasuredIsForgotten(t *testing.T) {
	zero, some := 0.0, 0.3
	pairs := map[string]PairPredictors{
		"shared": {SharedError: 0.1, Agreement: &zero},
		"both":   {AccA: 0.6, AccB: 0.5, Agreement: &zero},
		"allows": {AccA: 0.4, AccB: 0.5, Agreement: &zero},
		"some":   {SharedError: 0.1, Agreement: &some},
		"absent": {SharedError: 0.1},
	}
	if n := ForgetUnmeasured(pairs); n != 2 {
		t.Errorf("forgot %d agreements, want 2", n)
	}
	for k, missing := range map[string]bool{"shared": true, "both": true, "allows": false, "some": false, "absent": true} {
		if (pairs[k].Agreement == nil) != missing {
			t.Errorf("%s: agreement %v, want missing %v", k, pairs[k].Agreement, missing)
		}
	}
}
