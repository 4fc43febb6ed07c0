package evaluate

import (
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/tokenizer"
)

// TestSampledEvaluation: with k samples per problem, sampled pass@1 is the
// mean share of right samples, maj@k the share of problems whose samples'
// unique plurality is right; the draws depend on the seed alone (two runs
// agree), and the greedy half equals a greedy-only evaluation.
func TestSampledEvaluation(t *testing.T) {
	dir := filepath.Join("..", "examples", "bases", "llama-small")
	m, err := model.LoadHF(cpu.New(2), dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	task, _ := datasets.LookupTask("arith")
	sp, err := task.Split(1, datasets.SplitSizes{Eval: 16, MaxLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{MaxNew: 40, Answers: datasets.TaskAnswers, Samples: 6, Temperature: 1, Seed: 3}
	a, err := Run(m, tok, sp.Eval, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(m, tok, sp.Eval, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("two evaluations with one seed differ")
	}
	greedy, err := PassAt1(m, tok, sp.Eval, 40, datasets.TaskAnswers)
	if err != nil {
		t.Fatal(err)
	}
	if greedy.PassAt1 != a.PassAt1 || !reflect.DeepEqual(greedy.Answers, a.Answers) {
		t.Errorf("greedy answers changed when samples were added: %v vs %v", greedy.PassAt1, a.PassAt1)
	}
	var mean, maj float64
	for i, p := range sp.Eval {
		if len(a.SampleAnswers[i]) != 6 {
			t.Fatalf("problem %d: %d samples", i, len(a.SampleAnswers[i]))
		}
		right := 0
		for _, ans := range a.SampleAnswers[i] {
			if ans == datasets.Normalize(p.Answer) {
				right++
			}
		}
		if right != a.SampleCorrect[i] {
			t.Errorf("problem %d: %d right samples counted, %d by their answers", i, a.SampleCorrect[i], right)
		}
		mean += float64(right) / 6
		if best, _, tie := datasets.MostCommon(a.SampleAnswers[i]); !tie && best == datasets.Normalize(p.Answer) {
			maj++
		}
	}
	n := float64(len(sp.Eval))
	if math.Abs(a.SampledPassAt1-mean/n) > 1e-12 || math.Abs(a.MajAtK-maj/n) > 1e-12 {
		t.Errorf("sampled pass@1 %v maj@6 %v, recomputed %v %v", a.SampledPassAt1, a.MajAtK, mean/n, maj/n)
	}
	if a.SampledPassAt1 == 0 || a.SampledPassAt1 == 1 {
		t.Errorf("sampled pass@1 %v: the check needs a model that is partly right", a.SampledPassAt1)
	}
	o.Seed = 4
	c, err := Run(m, tok, sp.Eval, o)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(c.SampleAnswers, a.SampleAnswers) {
		t.Error("another seed drew the same samples")
	}
}
