package datasets

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// evalSolutionSteps checks a worked solution's "a op b=c" steps arithmetically.
var stepRe = regexp.MustCompile(`(?:^|[\s,:])(-?\d+)([+\-*/])\(?(-?\d+)\)?=(-?\d+)`)

func TestGeneratedProblemsAreConsistent(t *testing.T) {
	for _, task := range Tasks() {
		r := rand.New(rand.NewPCG(1, 2))
		for level := 1; level <= task.Levels; level++ {
			for i := 0; i < 200; i++ {
				p := task.Generate(r, level)
				if p.Prompt == "" || p.Answer == "" || len(p.views) < 2 {
					t.Fatalf("%s level %d: incomplete problem %+v", task.Name, level, p)
				}
				if _, ok := new(big.Rat).SetString(p.Answer); !ok {
					t.Fatalf("%s: answer %q is not a number", task.Name, p.Answer)
				}
				// The solution's stated final answer is the answer, and the
				// grader accepts the solution as a response.
				if Grade(p.Solution, p.Answer) != Correct {
					t.Fatalf("%s: solution %q does not grade correct against %q", task.Name, p.Solution, p.Answer)
				}
				for _, m := range stepRe.FindAllStringSubmatch(p.Solution, -1) {
					a, _ := strconv.Atoi(m[1])
					b, _ := strconv.Atoi(m[3])
					c, _ := strconv.Atoi(m[4])
					want := map[string]int{"+": a + b, "-": a - b, "*": a * b}[m[2]]
					if m[2] == "/" {
						want = a / b
					}
					if want != c {
						t.Fatalf("%s: solution step %q is wrong in %q", task.Name, m[0], p.Solution)
					}
				}
			}
		}
	}
}

func TestTaskAnswersByHand(t *testing.T) {
	// The expression family's answer must equal Go's own evaluation of the
	// rendered expression (precedence and parentheses included).
	r := rand.New(rand.NewPCG(3, 3))
	task, _ := LookupTask("expr")
	for i := 0; i < 300; i++ {
		p := task.Generate(r, 1+i%3)
		expr := strings.TrimSuffix(strings.TrimPrefix(p.Prompt, "Evaluate "), ".")
		if got := evalInt(t, expr); strconv.Itoa(got) != p.Answer {
			t.Fatalf("%q evaluates to %d, generator says %s", expr, got, p.Answer)
		}
	}
}

// evalInt is a small precedence-climbing evaluator for + - * and parentheses.
func evalInt(t *testing.T, s string) int {
	pos := 0
	var expr, term, factor func() int
	factor = func() int {
		if s[pos] == '(' {
			pos++
			v := expr()
			pos++ // ')'
			return v
		}
		start := pos
		if s[pos] == '-' {
			pos++
		}
		for pos < len(s) && s[pos] >= '0' && s[pos] <= '9' {
			pos++
		}
		v, err := strconv.Atoi(s[start:pos])
		if err != nil {
			t.Fatalf("bad number in %q: %v", s, err)
		}
		return v
	}
	term = func() int {
		v := factor()
		for pos < len(s) && s[pos] == '*' {
			pos++
			v *= factor()
		}
		return v
	}
	expr = func() int {
		v := term()
		for pos < len(s) && (s[pos] == '+' || s[pos] == '-') {
			op := s[pos]
			pos++
			if op == '+' {
				v += term()
			} else {
				v -= term()
			}
		}
		return v
	}
	return expr()
}

func TestSplitsAreDisjointAndDeterministic(t *testing.T) {
	for _, task := range Tasks() {
		sizes := SplitSizes{Pretrain: 300, RL: 200, Eval: 100}
		a, err := task.Split(7, sizes)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := task.Split(7, sizes)
		seen := map[string]string{}
		for name, set := range map[string][]Problem{"pretrain": a.Pretrain, "rl": a.RL, "eval": a.Eval} {
			for _, p := range set {
				if other, dup := seen[p.Prompt]; dup {
					t.Fatalf("%s: %q in both %s and %s", task.Name, p.Prompt, other, name)
				}
				seen[p.Prompt] = name
			}
		}
		if len(a.Pretrain) != 300 || len(a.RL) != 200 || len(a.Eval) != 100 {
			t.Fatalf("%s: sizes %d/%d/%d", task.Name, len(a.Pretrain), len(a.RL), len(a.Eval))
		}
		for i := range a.RL {
			if a.RL[i].Prompt != b.RL[i].Prompt || a.RL[i].Answer != b.RL[i].Answer {
				t.Fatalf("%s: same seed gave different problem %d", task.Name, i)
			}
		}
		// Other sizes, same seed: membership agrees (no problem changes set).
		big, err := task.Split(7, SplitSizes{Pretrain: 600, RL: 50, Eval: 150})
		if err != nil {
			t.Fatal(err)
		}
		for name, set := range map[string][]Problem{"pretrain": big.Pretrain, "rl": big.RL, "eval": big.Eval} {
			for _, p := range set {
				if other, ok := seen[p.Prompt]; ok && other != name {
					t.Fatalf("%s: %q is %s in one call and %s in another", task.Name, p.Prompt, other, name)
				}
			}
		}
		c, _ := task.Split(8, sizes)
		if c.RL[0].Prompt == a.RL[0].Prompt && c.RL[1].Prompt == a.RL[1].Prompt {
			t.Fatalf("%s: different seeds gave the same problems", task.Name)
		}
	}
}

func TestSplitRefusesImpossibleSizes(t *testing.T) {
	task := Task{Name: "tiny", Levels: 1, gen: func(r *rand.Rand, _ int) Problem {
		n := r.IntN(3)
		return Problem{views: []string{fmt.Sprint(n)}, Answer: fmt.Sprint(n)}
	}}
	if _, err := task.Split(1, SplitSizes{Pretrain: 5}); err == nil || !strings.Contains(err.Error(), "distinct") {
		t.Fatalf("err = %v, want a 'distinct problems' error", err)
	}
}

func TestRephraseIsRowAlignedAndKeepsAnswers(t *testing.T) {
	for _, task := range Tasks() {
		s, err := task.Split(3, SplitSizes{RL: 50})
		if err != nil {
			t.Fatal(err)
		}
		re := Rephrase(s.RL, 1)
		if len(re) != len(s.RL) {
			t.Fatalf("%s: %d rephrased rows for %d", task.Name, len(re), len(s.RL))
		}
		for i := range re {
			if re[i].Answer != s.RL[i].Answer || re[i].Task != s.RL[i].Task {
				t.Fatalf("%s row %d: answer %q became %q", task.Name, i, s.RL[i].Answer, re[i].Answer)
			}
			if re[i].Prompt == s.RL[i].Prompt {
				t.Fatalf("%s row %d: rephrasing kept the wording %q", task.Name, i, re[i].Prompt)
			}
			if !strings.HasPrefix(re[i].ID, s.RL[i].ID) {
				t.Fatalf("%s row %d: id %q does not refer to %q", task.Name, i, re[i].ID, s.RL[i].ID)
			}
		}
		if orig := Rephrase(s.RL, 0); orig[0].Prompt != s.RL[0].Prompt {
			t.Fatalf("%s: view 0 is not the original wording", task.Name)
		}
	}
}

func TestLookupTaskListsNames(t *testing.T) {
	_, err := LookupTask("calculus")
	if err == nil || !strings.Contains(err.Error(), "arith") || !strings.Contains(err.Error(), "seq") {
		t.Fatalf("err = %v, want the list of tasks", err)
	}
}

// TestNoWordingLeaksIntoPretraining: for every family, no wording of an RL,
// validation or test problem appears among the wordings of the pretraining
// data (train and its validation), within one call and across calls that ask
// for other sizes or difficulty levels with the same seed (as `corl
// pretrain --max-level 1` and an RL run over all levels do). The sets are
// checked on every wording, not the first only: a rephrased `word` problem
// can read exactly like another draw's original.
func TestNoWordingLeaksIntoPretraining(t *testing.T) {
	for _, task := range Tasks() {
		pretrained := map[string]string{} // wording -> problem ID
		for level := 1; level <= task.Levels; level++ {
			s, err := task.Split(1, SplitSizes{Pretrain: 600, PretrainVal: 40, MaxLevel: level})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range append(s.Pretrain, s.PretrainVal...) {
				for _, w := range p.Views() {
					pretrained[w] = p.ID
				}
			}
		}
		for level := 0; level <= task.Levels; level++ {
			s, err := task.Split(1, SplitSizes{RL: 150, Validation: 20, Eval: 50, MaxLevel: level})
			if err != nil {
				t.Fatal(err)
			}
			for _, set := range [][]Problem{s.RL, s.Validation, s.Eval} {
				for _, p := range set {
					for _, w := range p.Views() {
						if id, ok := pretrained[w]; ok {
							t.Errorf("%s level<=%d: %s's wording %q is pretraining problem %s's", task.Name, level, p.ID, w, id)
						}
					}
				}
			}
		}
	}
}
