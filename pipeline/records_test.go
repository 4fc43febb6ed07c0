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
