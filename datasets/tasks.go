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
	// problem was rephrased.
	views []string
	// key names the problem's content, the same for every draw of it in any
	// wording: split membership hashes it. A generator whose wordings are
	// fixed functions of the content leaves it empty (the first wording is
	// then the key); one that picks wordings at random sets it.
	key string
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
	if p.key == "" {
		p.key = p.views[0]
	}
	p.Solution += " The answer is " + p.Answer + "."
	return p
}

// SplitSizes are the sizes of the disjoint sets, and the highest difficulty
// level to draw (0: all levels).
type SplitSizes struct{ Pretrain, PretrainVal, RL, Validation, Eval, MaxLevel int }

// Splits holds a task's disjoint problem sets. Pretrain (with PretrainVal
// for its early stopping) is labeled training data; RL prompts are used
// without their answers; Validation is for choosing hyperparameters; Eval is
// the test split, for reported numbers only.
type Splits struct {
	Pretrain, PretrainVal, RL, Validation, Eval []Problem
}

// The sets in bucket order, their names in problem IDs, and their shares of
// problems (per 100, cumulative): 65 / 5 / 20 / 3 / 7. They nest in the
// deciles of an earlier three-way split (70 pretrain, 20 RL, 10 eval), so
// its pretraining data is still disjoint from these RL and test sets.
var (
	bucketNames = [...]string{"pre", "preval", "rl", "val", "eval"}
	bucketCum   = [...]uint64{65, 70, 90, 93, 100}
)

// Split generates disjoint sets of t's problems, levels drawn uniformly,
// deterministic from seed. Which set a problem belongs to is a function of
// the seed and the problem's content key alone (see Problem.key): every
// wording of a problem is a function of its content, so a wording shared by
// two draws (a rephrasing of one can be the other's first wording) means one
// content, one key, one set. Calls with other sizes or levels and the same
// seed agree on membership: a model pretrained on one call's Pretrain never
// sees any wording of another call's RL, Validation or Eval problems. No
// content and no wording appears twice.
func (t Task) Split(seed uint64, n SplitSizes) (Splits, error) {
	h := fnv.New64a()
	h.Write([]byte(t.Name))
	r := rand.New(rand.NewPCG(seed, h.Sum64()))
	seen := map[string]bool{}
	want := [5]int{n.Pretrain, n.PretrainVal, n.RL, n.Validation, n.Eval}
	var sets [5][]Problem
	// Expected draws to fill set b are want[b] / its share; allow 50 times
	// the sum before calling the problem space too small.
	limit := 1000
	for b, w := range want {
		lo := uint64(0)
		if b > 0 {
			lo = bucketCum[b-1]
		}
		limit += 50 * w * 100 / int(bucketCum[b]-lo)
	}
	full := func() bool {
		for b := range want {
			if len(sets[b]) < want[b] {
				return false
			}
		}
		return true
	}
	for tries := 0; !full(); tries++ {
		if tries > limit {
			var got [5]int
			for b := range sets {
				got[b] = len(sets[b])
			}
			return Splits{}, fmt.Errorf("task %s: only %v distinct problems after %d draws, %v wanted (pretrain, pretrain-val, rl, validation, eval); allow more levels or ask for fewer",
				t.Name, got, tries, want)
		}
		levels := t.Levels
		if n.MaxLevel > 0 {
			levels = min(levels, n.MaxLevel)
		}
		p := t.Generate(r, 1+r.IntN(levels))
		dup := seen[p.key]
		for _, v := range p.views {
			dup = dup || seen[v]
		}
		if dup {
			continue
		}
		seen[p.key] = true
		for _, v := range p.views {
			seen[v] = true
		}
		b := bucket(seed, p.key)
		if len(sets[b]) >= want[b] {
			continue
		}
		p.ID = fmt.Sprintf("%s-%d-%s-%d", t.Name, seed, bucketNames[b], len(sets[b]))
		sets[b] = append(sets[b], p)
	}
	return Splits{Pretrain: sets[0], PretrainVal: sets[1], RL: sets[2], Validation: sets[3], Eval: sets[4]}, nil
}

// bucket assigns a problem's content key to a set: v in [0, 100) whose tens
// digit is the hash mod 10 (the earlier decile), its units the next digit.
func bucket(seed uint64, key string) int {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s", seed, key)
	x := h.Sum64()
	v := (x%10)*10 + (x/10)%10
	for b, c := range bucketCum {
		if v < c {
			return b
		}
	}
	return len(bucketCum) - 1
}

// HeldOut returns n problems of t's held-out split by name: "test" (the
// Eval set, for reported numbers) or "validation" (for choosing
// hyperparameters).
func HeldOut(t Task, seed uint64, split string, n, maxLevel int) ([]Problem, error) {
	switch split {
	case "test":
		s, err := t.Split(seed, SplitSizes{Eval: n, MaxLevel: maxLevel})
		return s.Eval, err
	case "validation":
		s, err := t.Split(seed, SplitSizes{Validation: n, MaxLevel: maxLevel})
		return s.Validation, err
	}
	return nil, fmt.Errorf("split %q is not one of test, validation", split)
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
