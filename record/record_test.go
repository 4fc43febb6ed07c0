package record

import (
	"math"
	"testing"

	"github.com/corl-project/corl/datasets"
)

// TestNewEvalScoresTheCohort: two members on four problems, by
// construction: the pooled vote is right on the problems where either
// member's two samples out-vote the other's, ties count as not right, and
// the pair's rescue and shared-error rates are what the votes say.
func TestNewEvalScoresTheCohort(t *testing.T) {
	truth := []string{"1", "2", "3", "4"}
	a := [][]string{{"1", "1"}, {"9", "9"}, {"3", "8"}, {"7", "7"}}
	b := [][]string{{"1", "5"}, {"2", "2"}, {"8", "8"}, {"7", "7"}}
	ra := Result{N: 4, Correct: []bool{true, false, true, false}}
	rb := Result{N: 4, Correct: []bool{true, true, false, false}}
	e := NewEval(3, []string{"a", "b"}, []Result{ra, rb}, [][][]string{a, b}, truth)
	// Pools: p0 1,1,1,5 right; p1 9,9,2,2 tie; p2 3,8,8,8 wrong; p3 all 7 wrong.
	if e.Round != 3 || math.Abs(e.Cohort.Correct-0.25) > 1e-12 || math.Abs(e.Cohort.Tie-0.25) > 1e-12 {
		t.Fatalf("cohort %+v, want right 0.25 and tie 0.25", e.Cohort)
	}
	pp, ok := e.Pairs["a/b"]
	if !ok || e.Kappa["a/b"] != pp.Kappa || e.Compl["a/b"] != pp.Complementarity {
		t.Fatalf("pair a/b: %+v, kappa %v, compl %v", pp, e.Kappa, e.Compl)
	}
	// Votes: a 1,9,(3|8 tie),7; b 1,2,8,7. Both wrong with the same answer
	// on p3 only.
	if math.Abs(pp.SharedError-0.25) > 1e-12 {
		t.Errorf("shared error %v, want 0.25", pp.SharedError)
	}
	if e.Members["b"].N != 4 || len(e.Members) != 2 {
		t.Errorf("members %+v", e.Members)
	}
}

// TestTruthIsGradedByTheRule: labels are normalised by the rule of the
// data (a text answer as text, not as a number), the same in every driver.
func TestTruthIsGradedByTheRule(t *testing.T) {
	probs := []datasets.Problem{{Prompt: "Largest animal?", Answer: "The Blue Whale"}, {Prompt: "2+2?", Answer: "4.0"}}
	rule := datasets.AnswerRule{Type: "text"}
	text := Truth(probs[:1], rule)
	num := Truth(probs[1:], datasets.TaskAnswers)
	if text[0] != rule.ForPrompt(probs[0].Prompt).Normalize("the blue whale") || num[0] != datasets.Normalize("4") {
		t.Fatalf("truth %q %q", text, num)
	}
}

// TestSchemaUpgrade: a record this code writes carries record.Schema, and
// its agreement of 0 with shared errors is a measurement that Upgrade
// keeps; the same record without a version is an older one, whose 0 was
// never measured and becomes missing, and whose members shared their
// evaluation draws.
func TestSchemaUpgrade(t *testing.T) {
	truth := []string{"1", "2"}
	pools := [][][]string{{{"3"}, {"2"}}, {{"3"}, {"5"}}}
	e := NewEval(0, []string{"a", "b"}, []Result{{Correct: []bool{false, true}}, {Correct: []bool{false, false}}}, pools, truth)
	if e.Schema != Schema || e.SharedDraws() {
		t.Fatalf("a new record: schema %d, shared draws %v", e.Schema, e.SharedDraws())
	}
	zero := 0.0
	pp := e.Pairs["a/b"]
	pp.Agreement = &zero // not what they voted, but a measurement all the same
	e.Pairs["a/b"] = pp
	if n := e.Upgrade(); n != 0 || e.Pairs["a/b"].Agreement == nil {
		t.Errorf("a current record lost %d fields to Upgrade", n)
	}
	e.Schema = 0
	if n := e.Upgrade(); n != 1 || e.Pairs["a/b"].Agreement != nil || !e.SharedDraws() {
		t.Errorf("an unversioned record: %d fields set missing, agreement %v, shared draws %v; want 1, missing, true", n, e.Pairs["a/b"].Agreement, e.SharedDraws())
	}
}
