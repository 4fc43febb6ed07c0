package cohort

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/record"
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
	er, err := Evaluate([]*rl.Member{m0, m1}, &Data{Eval: sp.Eval}, 0, evaluate.Options{MaxNew: 48, Answers: datasets.TaskAnswers})
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
	// The own-view predictors read l1's votes on its own wording, l0's on
	// the original.
	truth := record.Truth(sp.Eval, datasets.TaskAnswers)
	l0 := er.Members["l0"]
	want := record.PairsOf([]string{"l0", "l1"}, []evaluate.Result{l0, own}, [][][]string{l0.CohortAnswers(), own.CohortAnswers()}, truth)
	if !reflect.DeepEqual(er.PairsOwnView, want) {
		t.Errorf("own-view predictors %+v, want %+v", er.PairsOwnView, want)
	}
	if reflect.DeepEqual(er.PairsOwnView, er.Pairs) {
		t.Error("the own-view predictors equal the original wording's: l1's own votes were not used")
	}
}

// TestIdenticalCopiesSampleIndependently: two members with the same weights
// decode the same greedy answers, but their evaluation samples are drawn
// independently, so their votes (and the pair predictors read from them)
// are not the model's own twice; the same member evaluated again draws the
// same samples.
func TestIdenticalCopiesSampleIndependently(t *testing.T) {
	task, err := datasets.LookupTask("arith")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := task.Split(1, datasets.SplitSizes{Eval: 24, MaxLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join("..", "examples", "bases", "llama-small")
	var ms []*rl.Member
	for _, name := range []string{"m", "m-copy"} {
		m, err := LoadMember(cpu.New(2), spec.Member{Name: name}, base, false)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	o := evaluate.Options{MaxNew: 48, Answers: datasets.TaskAnswers, Samples: 4, Temperature: 1, Seed: 7}
	er, err := Evaluate(ms, &Data{Eval: sp.Eval}, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	a, b := er.Members["m"], er.Members["m-copy"]
	if !reflect.DeepEqual(a.Answers, b.Answers) {
		t.Error("two copies of one model decode different greedy answers")
	}
	if reflect.DeepEqual(a.SampleAnswers, b.SampleAnswers) {
		t.Error("the identical copy drew the model's own samples: its votes are not independent")
	}
	again, err := Evaluate(ms[:1], &Data{Eval: sp.Eval}, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Members["m"].SampleAnswers, a.SampleAnswers) {
		t.Error("the same member evaluated again drew other samples")
	}
}

// TestPredictorsOnTheValidationSplit: eval.predictor_split adds the
// validation problems, disjoint from the test ones, without changing the
// RL prompts or the test set; the round-0 evaluation of a pair measures
// the predictors there (the same numbers as the two members' own
// evaluations on those problems give), and no later evaluation does.
func TestPredictorsOnTheValidationSplit(t *testing.T) {
	s := spec.Default()
	s.Data.Tasks, s.Data.RLSize, s.Data.MaxLevel, s.Eval.Size = []string{"arith"}, 16, 1, 12
	plain, err := LoadData(&s)
	if err != nil {
		t.Fatal(err)
	}
	s.Eval.PredictorSplit = "validation"
	d, err := LoadData(&s)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.RL, plain.RL) || !reflect.DeepEqual(d.Eval, plain.Eval) || plain.Predict != nil {
		t.Fatal("asking for predictors on validation changed the RL prompts or the test set")
	}
	if len(d.Predict) != 12 {
		t.Fatalf("%d predictor problems, want 12", len(d.Predict))
	}
	test := map[string]bool{}
	for _, p := range d.Eval {
		test[p.Prompt] = true
	}
	for _, p := range d.Predict {
		if test[p.Prompt] {
			t.Fatalf("predictor problem %q is also a test problem", p.Prompt)
		}
	}
	base := filepath.Join("..", "examples", "bases", "llama-small")
	other := filepath.Join("..", "examples", "bases", "gpt2-small")
	a, err := LoadMember(cpu.New(2), spec.Member{Name: "a"}, base, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadMember(cpu.New(2), spec.Member{Name: "b"}, other, false)
	if err != nil {
		t.Fatal(err)
	}
	o := evaluate.Options{MaxNew: 48, Answers: datasets.TaskAnswers}
	er, err := Evaluate([]*rl.Member{a, b}, d, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	ra, _ := PredictMember(a, d.Predict, o.ForMember("a"))
	rb, _ := PredictMember(b, d.Predict, o.ForMember("b"))
	want := record.PairsOf([]string{"a", "b"}, []evaluate.Result{ra, rb}, [][][]string{ra.CohortAnswers(), rb.CohortAnswers()}, record.Truth(d.Predict, o.Answers))
	if !reflect.DeepEqual(er.PairsValidation, want) || len(want) != 1 {
		t.Errorf("round-0 predictors on validation %+v, want %+v", er.PairsValidation, want)
	}
	if reflect.DeepEqual(er.PairsValidation, er.Pairs) {
		t.Error("the validation predictors equal the test ones: they were not measured on other problems")
	}
	later, err := Evaluate([]*rl.Member{a, b}, d, 2, o)
	if err != nil {
		t.Fatal(err)
	}
	if later.PairsValidation != nil {
		t.Error("a later evaluation measured the round-0 predictors again")
	}
}
