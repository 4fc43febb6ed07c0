// Package datasets provides corl's problems: built-in reasoning task families
// with verifiable answers and short worked solutions, deterministic from a
// seed and split into disjoint labeled-pretraining, unlabeled-RL and labeled
// evaluation sets; row-aligned rephrased views of any set; loaders for user
// JSONL and Parquet files; and answer extraction, normalisation and grading.
package datasets

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// Problem is one question with a single verifiable final answer.
type Problem struct {
	ID       string `json:"id"`
	Task     string `json:"task"`
	Level    int    `json:"level"`
	Prompt   string `json:"prompt"`
	Answer   string `json:"answer"`
	Solution string `json:"solution,omitempty"` // worked solution ending "The answer is X."
	// views are the problem's surface forms; Prompt is views[0] unless the
	// problem was rephrased. Keyed by the first view for split disjointness.
	views []string
}

// Task is a family of generated problems.
type Task struct {
	Name        string
	Description string
	Levels      int // difficulty levels 1..Levels
	gen         func(r *rand.Rand, level int) Problem
}

var tasks = map[string]Task{}

func register(t Task) { tasks[t.Name] = t }

// Tasks lists the built-in task families by name.
func Tasks() []Task {
	out := make([]Task, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupTask returns the named task or an error listing the valid names.
func LookupTask(name string) (Task, error) {
	if t, ok := tasks[name]; ok {
		return t, nil
	}
	names := make([]string, 0, len(tasks))
	for _, t := range Tasks() {
		names = append(names, t.Name)
	}
	return Task{}, fmt.Errorf("task %q: unknown; have %s", name, strings.Join(names, ", "))
}

// Generate makes one problem of the given level (1..Levels).
func (t Task) Generate(r *rand.Rand, level int) Problem {
	level = min(max(level, 1), t.Levels)
	p := t.gen(r, level)
	p.Task, p.Level = t.Name, level
	p.Prompt = p.views[0]
	p.Solution += " The answer is " + p.Answer + "."
	return p
}

// SplitSizes are the sizes of the three disjoint sets, and the highest
// difficulty level to draw (0: all levels).
type SplitSizes struct{ Pretrain, RL, Eval, MaxLevel int }

// Splits holds a task's three disjoint problem sets. Pretrain and Eval are
// labeled; RL prompts are meant to be used without their answers.
type Splits struct {
	Pretrain, RL, Eval []Problem
}

// Split generates disjoint sets of t's problems, levels drawn uniformly,
// deterministic from seed. Which set a problem belongs to is a function of
// the seed and the problem alone (a hash into 70% pretrain, 20% RL, 10% eval
// buckets), so calls with other sizes and the same seed agree on membership:
// a model pretrained on one call's Pretrain never sees another call's RL or
// Eval problems. No prompt appears twice.
func (t Task) Split(seed uint64, n SplitSizes) (Splits, error) {
	h := fnv.New64a()
	h.Write([]byte(t.Name))
	r := rand.New(rand.NewPCG(seed, h.Sum64()))
	seen := map[string]bool{}
	want := [3]int{n.Pretrain, n.RL, n.Eval}
	var sets [3][]Problem
	total := n.Pretrain + n.RL + n.Eval
	for tries := 0; len(sets[0]) < want[0] || len(sets[1]) < want[1] || len(sets[2]) < want[2]; tries++ {
		if tries > 50*total+1000 {
			return Splits{}, fmt.Errorf("task %s: only %d/%d/%d distinct problems after %d draws, %d/%d/%d wanted",
				t.Name, len(sets[0]), len(sets[1]), len(sets[2]), tries, want[0], want[1], want[2])
		}
		levels := t.Levels
		if n.MaxLevel > 0 {
			levels = min(levels, n.MaxLevel)
		}
		p := t.Generate(r, 1+r.IntN(levels))
		if seen[p.views[0]] {
			continue
		}
		seen[p.views[0]] = true
		b := bucket(seed, p.views[0])
		if len(sets[b]) >= want[b] {
			continue
		}
		p.ID = fmt.Sprintf("%s-%d-%s-%d", t.Name, seed, [...]string{"pre", "rl", "eval"}[b], len(sets[b]))
		sets[b] = append(sets[b], p)
	}
	return Splits{Pretrain: sets[0], RL: sets[1], Eval: sets[2]}, nil
}

// bucket assigns a problem to pretrain (0), RL (1) or eval (2).
func bucket(seed uint64, key string) int {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s", seed, key)
	switch v := h.Sum64() % 10; {
	case v < 7:
		return 0
	case v < 9:
		return 1
	}
	return 2
}

// Rephrase returns a row-aligned view of set in which every problem is stated
// in another surface form (another template or scenario) with the same
// answer. view 0 is the original wording; problems with fewer views wrap.
func Rephrase(set []Problem, view int) []Problem {
	out := make([]Problem, len(set))
	for i, p := range set {
		q := p
		if len(p.views) > 0 {
			q.Prompt = p.views[view%len(p.views)]
		}
		if view != 0 {
			q.ID = fmt.Sprintf("%s~v%d", p.ID, view)
		}
		out[i] = q
	}
	return out
}

// Views returns the problem's surface forms.
func (p Problem) Views() []string { return append([]string(nil), p.views...) }

func itoa(n int) string { return strconv.Itoa(n) }

// signed writes n for use after an operator: negative numbers in parentheses.
func signed(n int) string {
	if n < 0 {
		return "(" + itoa(n) + ")"
	}
	return itoa(n)
}

func digits(r *rand.Rand, d int) int {
	lo := 1
	for i := 1; i < d; i++ {
		lo *= 10
	}
	return lo + r.IntN(9*lo)
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }
