package cohort

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/rl"
	"github.com/corl-project/corl/spec"
)

// TestMembersAreEvaluatedOnTheirOwnView: a member trained on the rephrased
// wording is scored on it as well as on the original; the two differ (other
// prompts, other greedy answers), and a view-0 member's are one and the same.
func TestMembersAreEvaluatedOnTheirOwnView(t *testing.T) {
	task, err := datasets.LookupTask("arith")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := task.Split(1, datasets.SplitSizes{Eval: 24, MaxLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join("..", "examples", "bases", "llama-small")
	m1, err := LoadMember(cpu.New(2), spec.Member{Name: "l1", View: 1}, base, false)
	if err != nil {
		t.Fatal(err)
	}
	m0, err := LoadMember(cpu.New(2), spec.Member{Name: "l0"}, base, false)
	if err != nil {
		t.Fatal(err)
	}
	er, err := Evaluate([]*rl.Member{m0, m1}, sp.Eval, 0, evaluate.Options{MaxNew: 48, Answers: datasets.TaskAnswers})
	if err != nil {
		t.Fatal(err)
	}
	orig, own := er.Members["l1"], er.OwnView["l1"]
	if own.N != orig.N || own.N != 24 {
		t.Fatalf("view-1 member: %d problems on its own view, %d original", own.N, orig.N)
	}
	if reflect.DeepEqual(own.Answers, orig.Answers) {
		t.Error("the view-1 member's own-view answers equal its original-wording answers: it was not shown the rephrased prompts")
	}
	if _, ok := er.OwnView["l0"]; ok {
		t.Error("a view-0 member has a separate own-view result")
	}
	if !reflect.DeepEqual(er.Members["l0"].Answers, orig.Answers) {
		t.Error("two copies of one model scored differently on the original wording")
	}
}
