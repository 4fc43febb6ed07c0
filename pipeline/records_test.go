package pipeline

import (
	"testing"

	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/spec"
)

// TestRecordsKeepTheOldestSchema: an evaluation aggregated from members'
// outputs is as old as its oldest output, so a history of older workers
// read with this code still says its members shared their draws.
func TestRecordsKeepTheOldestSchema(t *testing.T) {
	s := spec.Default()
	s.Members = []spec.Member{{Name: "a", Base: "b"}, {Name: "c", Base: "b"}}
	out := func(schema int) EvalOutput {
		o := NewEvalOutput(record.Result{Correct: []bool{true}, Answers: []string{"1"}}, record.Result{}, 0, []string{"1"})
		o.Schema = schema
		return o
	}
	for _, c := range []struct{ a, b, want int }{{record.Schema, record.Schema, record.Schema}, {record.Schema, 0, 0}} {
		r := NewRecords(s)
		r.Evaluated(MemberRef{Spec: s, Member: 0}, out(c.a))
		r.Evaluated(MemberRef{Spec: s, Member: 1}, out(c.b))
		if e := r.Evals(); len(e) != 1 || e[0].Schema != c.want {
			t.Errorf("outputs of schema %d and %d: evaluations %+v, want one of schema %d", c.a, c.b, e, c.want)
		}
	}
	if o := NewEvalOutput(record.Result{}, record.Result{}, 0, nil); o.Schema != record.Schema {
		t.Errorf("a new output has schema %d, want %d", o.Schema, record.Schema)
	}
}

// TestRecordsOwnViewPairs: a member on another view adds its own-view
// votes, and the evaluation's own-view predictors pair them with the
// view-0 member's original ones; an output without its own-view pool (an
// older worker's) leaves them out rather than mixing wordings.
func TestRecordsOwnViewPairs(t *testing.T) {
	s := spec.Default()
	s.Members = []spec.Member{{Name: "a", Base: "b"}, {Name: "r", Base: "c", View: 1}}
	truth := []string{"1", "2", "3"}
	a := record.Result{N: 3, Correct: []bool{true, false, false}, Answers: []string{"1", "5", "6"}}
	orig := record.Result{N: 3, Correct: []bool{false, false, false}, Answers: []string{"7", "8", "9"}}
	own := record.Result{N: 3, Correct: []bool{false, true, true}, Answers: []string{"4", "2", "3"}}
	for _, keepPool := range []bool{true, false} {
		r := NewRecords(s)
		r.Evaluated(MemberRef{Spec: s, Member: 0}, NewEvalOutput(a, a, 0, truth))
		o := NewEvalOutput(orig, own, 1, truth)
		if !keepPool {
			o.OwnPool = nil
		}
		r.Evaluated(MemberRef{Spec: s, Member: 1}, o)
		e := r.Evals()[0]
		if !keepPool {
			if e.PairsOwnView != nil {
				t.Errorf("without the own-view pool: own-view pairs %+v", e.PairsOwnView)
			}
			continue
		}
		want := record.PairsOf([]string{"a", "r"}, []record.Result{a, own}, [][][]string{a.CohortAnswers(), own.CohortAnswers()}, truth)
		if got := e.PairsOwnView["a/r"]; got.RescueAB != want["a/r"].RescueAB || got.RescueAB != 1 || e.Pairs["a/r"].RescueAB != 0 {
			t.Errorf("own-view pair %+v (original %+v), want %+v: r's own votes rescue both of a's errors", got, e.Pairs["a/r"], want["a/r"])
		}
	}
}
