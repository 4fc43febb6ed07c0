package report

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/stats"
)

// score is a member's headline number at an evaluation: sampled pass@1
// when the evaluation sampled, greedy pass@1 otherwise.
func score(e record.Eval, member string) (float64, bool) {
	m, ok := e.Members[member]
	if !ok {
		return 0, false
	}
	if m.Samples > 0 {
		return m.SampledPassAt1, true
	}
	return m.PassAt1, true
}

// scoreCI is the 95% interval of score's number.
func scoreCI(m evaluate.Result) stats.Interval {
	if m.Samples > 0 && m.SampledCI != nil {
		return *m.SampledCI
	}
	return m.PassAt1CI
}

func scoreByTask(e record.Eval, member string) map[string]float64 {
	m := e.Members[member]
	if m.Samples > 0 && m.SampledByTask != nil {
		return m.SampledByTask
	}
	return m.ByTask
}

// Row is one line of the table: a method, its mean and 95% interval over
// seeds per task family and on average, greedy pass@1 beside it, the
// paired gain over the base, and its FLOPs.
type Row struct {
	Method     string                    `json:"method"`
	Seeds      int                       `json:"seeds"`
	ByTask     map[string]stats.Interval `json:"by_task"`
	Average    stats.Interval            `json:"average"`
	Greedy     stats.Interval            `json:"greedy_pass_at_1"`
	Gain       *Paired                   `json:"gain_vs_base,omitempty"`        // of the headline metric
	GreedyGain *Paired                   `json:"greedy_gain_vs_base,omitempty"` // of greedy pass@1
	// GainByTask is the headline gain on each task's problems alone
	// (gainsByTask; descriptive, outside the Holm family).
	GainByTask map[string]*Paired `json:"gain_vs_base_by_task,omitempty"`
	FLOPs      float64            `json:"flops"`
	// Seconds is the members' generation and update time (Run.Seconds),
	// the mean over seeds: compute time beside the FLOPs.
	Seconds float64 `json:"compute_seconds"`
	Metric  string  `json:"metric"` // "sampled pass@1" or "pass@1"
	// Collapse is what the scored members sampled while training, first
	// and last round, averaged over seeds (absent for Base).
	Collapse *Collapse `json:"collapse,omitempty"`
}

// Collapse measures a method's training samples: the entropy (nats) of
// the answers sampled per prompt and their number of distinct answers, in
// the first and the last round. Self-reward collapse shows as both
// falling towards one answer per prompt.
type Collapse struct {
	EntropyFirst  float64 `json:"answer_entropy_first"`
	EntropyLast   float64 `json:"answer_entropy_last"`
	DistinctFirst float64 `json:"distinct_answers_first"`
	DistinctLast  float64 `json:"distinct_answers_last"`
	// ModalLast is the scored members' modal answer share in the last
	// round (near 1: one answer across prompts).
	ModalLast float64 `json:"modal_answer_share_last"`
	// Flagged is the share of runs in which a collapse rule
	// (record.Diagnostics.Flagged) held for a scored member in some round, and
	// FlaggedRounds the mean number of such rounds per run.
	Flagged       float64 `json:"flagged_runs"`
	FlaggedRounds float64 `json:"flagged_rounds"`
}

// Paired is a difference on the same problems: a method's final
// evaluation minus its base's (each seed against its own round 0), or one
// method's minus another's. Its interval and p hold both training-seed
// and problem variance (stats.CrossedDiff; over problems alone when there
// is one seed), and PHolm is p adjusted for every test of the table
// (Holm). MDD is the smallest true difference this design detects four
// times in five; ProblemsOnly, beside it, is the interval that
// bootstrapping problems after averaging the seeds would give.
type Paired struct {
	Diff         stats.Interval  `json:"diff"`
	P            float64         `json:"p"`
	PHolm        float64         `json:"p_holm"`
	Problems     int             `json:"problems"`
	Seeds        [2]int          `json:"seeds"`
	MDD          float64         `json:"min_detectable"`
	SE           float64         `json:"se,omitempty"` // of Diff's mean, with DF degrees of freedom
	DF           float64         `json:"df,omitempty"`
	SeedShare    float64         `json:"seed_share"`
	ProblemsOnly *stats.Interval `json:"problems_only,omitempty"`
}

// Table is the paper-style comparison.
type Table struct {
	Tasks []string `json:"tasks"`
	// Member, when set, is the one member every row scores (the member
	// all the compared runs share); otherwise a row is the mean over
	// each run's members.
	Member string `json:"member,omitempty"`
	Rows   []Row  `json:"rows"`
	// Comparisons pits every method against every other on the same
	// problems: A's final outcomes minus B's, problem by problem.
	Comparisons []Comparison `json:"comparisons,omitempty"`
	// Members scores every member of every method (MemberRow).
	Members []MemberRow `json:"members,omitempty"`
	// Cohorts scores each cohort as a whole (CohortRow).
	Cohorts []CohortRow `json:"cohorts,omitempty"`
	// DoseResponse regresses cohorts' gains on each round-0 predictor.
	DoseResponse []DoseResponse `json:"dose_response,omitempty"`
	// PairedSeeds is Options.PairedSeeds: methods run on the same seeds
	// are compared seed by seed.
	PairedSeeds bool `json:"paired_seeds,omitempty"`
	// finals are the methods' final outcomes per seed and problem, which
	// pooled contrasts are computed from.
	finals []final
}

// Comparison is one test between two methods on the same problems: A's
// final outcomes minus B's, with both methods' seed variance and the
// problems' in it (see Paired).
type Comparison struct {
	A      string  `json:"a"`
	B      string  `json:"b"`
	Diff   *Paired `json:"diff"`             // of the headline metric
	Greedy *Paired `json:"greedy,omitempty"` // of greedy pass@1
	// PairedSeeds: the two methods' runs were paired by seed
	// (Options.PairedSeeds).
	PairedSeeds bool `json:"paired_seeds,omitempty"`
}

// sample is one seed's scores of a method (or of its base).
type sample struct {
	byTask     map[string]float64
	avg        float64
	greedy     float64
	ci, gci    *stats.Interval
	flops      float64
	seconds    float64
	metric     string
	from, to   []float64 // per-problem outcomes of the base and of this, when kept
	tasks      []string  // each problem's task, where known (problemTasks)
	seed       uint64    // the run's seed
	gFrom, gTo []float64 // the same, greedy
	collapse   *Collapse
}

// sampleOf is the evaluation e's scores, the mean over the scored members.
func sampleOf(e record.Eval, scored []string, flops float64) sample {
	s := sample{byTask: map[string]float64{}, flops: flops, metric: "pass@1"}
	for _, name := range scored {
		v, _ := score(e, name)
		s.avg += v / float64(len(scored))
		s.greedy += e.Members[name].PassAt1 / float64(len(scored))
		for task, tv := range scoreByTask(e, name) {
			s.byTask[task] += tv / float64(len(scored))
		}
		if e.Members[name].Samples > 0 {
			s.metric = "sampled pass@1"
		}
	}
	if len(scored) == 1 {
		m := e.Members[scored[0]]
		ci, gci := scoreCI(m), m.PassAt1CI
		s.ci, s.gci = &ci, &gci
	}
	s.to, s.gTo = perProblem(e, scored, false), perProblem(e, scored, true)
	return s
}

// rowOf is one method's row from its seeds' samples.
func rowOf(method string, ss []sample, tasks []string) Row {
	row := Row{Method: method, Seeds: len(ss), ByTask: map[string]stats.Interval{}, Metric: ss[0].metric}
	avg, greedy := make([]float64, len(ss)), make([]float64, len(ss))
	for i, s := range ss {
		avg[i], greedy[i] = s.avg, s.greedy
		row.FLOPs += s.flops / float64(len(ss))
		row.Seconds += s.seconds / float64(len(ss))
	}
	row.Average, row.Greedy = seedInterval(avg), seedInterval(greedy)
	if len(ss) == 1 && ss[0].ci != nil {
		row.Average, row.Greedy = *ss[0].ci, *ss[0].gci
	}
	if len(ss) > 1 { // with the problems' variance too, where kept
		if lv := level(seedOutcomes(ss, func(s sample) []float64 { return s.to })); lv != nil {
			row.Average = *lv
		}
		if lv := level(seedOutcomes(ss, func(s sample) []float64 { return s.gTo })); lv != nil {
			row.Greedy = *lv
		}
	}
	for _, task := range tasks {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = s.byTask[task]
		}
		row.ByTask[task] = seedInterval(v)
	}
	row.Collapse = meanCollapse(ss, func(s sample) *Collapse { return s.collapse })
	row.Gain = pairedGain(ss, func(s sample) ([]float64, []float64) { return s.from, s.to })
	row.GreedyGain = pairedGain(ss, func(s sample) ([]float64, []float64) { return s.gFrom, s.gTo })
	row.GainByTask = gainsByTask(ss, tasks)
	return row
}

// BuildTable groups runs by method; each run contributes the mean over its
// members (or member alone, when set; runs without it are left out) of its
// final evaluation, and the Base row is the runs' first evaluation (round
// 0), once per seed (its own sampling draws). With one seed the interval
// is the run's own bootstrap over problems; over several, one over seeds
// and problems together (level) where the evaluations kept per-problem
// outcomes, else a t-interval of the seeds' means. With per-problem
// outcomes each method row has its gain over its round-0 evaluation, and
// every pair of methods is compared (see Paired); all of the table's p
// values are Holm-corrected together.
func BuildTable(runs []*Run, member string) Table {
	return BuildTableWith(runs, member, Options{})
}

// Options change how BuildTableWith compares methods.
type Options struct {
	// PairedSeeds pairs two methods' runs by seed where both ran the same
	// seeds (a seed is the same base evaluation draws and data order in
	// every method): the seeds' shared effect cancels out of their
	// difference (stats.CrossedDiff with pairedSeeds, and
	// stats.CombinationPaired for pooled contrasts). Comparisons of
	// methods with other seeds stay unpaired.
	PairedSeeds bool
}

// BuildTableWith is BuildTable with o's options.
func BuildTableWith(runs []*Run, member string, o Options) Table {
	t := Table{Member: member, PairedSeeds: o.PairedSeeds}
	taskSet := map[string]bool{}
	groups := map[string][]sample{}
	var finals []final
	rep := map[string]*Run{} // a method's first run; nil for a Base row
	var order []string
	add := func(key string, r *Run, s sample) {
		if _, ok := groups[key]; !ok {
			order = append(order, key)
			rep[key] = r
		}
		groups[key] = append(groups[key], s)
	}
	bases := map[string]bool{}
	names := map[string]string{} // a Base row's models
	taskCache := map[string][]string{}
	for _, r := range runs {
		first, last := r.Evals[0], r.Evals[len(r.Evals)-1]
		scored := memberNames(first)
		if member != "" {
			m := scoredMember(r, member)
			if m == "" {
				continue
			}
			scored = []string{m}
		}
		dirs := baseDirs(r, scored)
		baseKey := "base:" + strings.Join(dirs, ",")
		if _, ok := names[baseKey]; !ok {
			short := make([]string, 0)
			for _, d := range dirs {
				short = append(short, filepath.Base(d))
			}
			if slices.ContainsFunc(dirs, func(d string) bool { return strings.HasPrefix(d, "blob:") }) {
				short = scored // an uploaded base's name is its hash: the members it starts
			}
			names[baseKey] = strings.Join(short, ", ")
		}
		var from, gFrom []float64
		if first.Round == 0 {
			from, gFrom = perProblem(first, scored, false), perProblem(first, scored, true)
		}
		for _, pick := range []struct {
			key   string
			run   *Run // the method's run; nil for its Base row
			e     record.Eval
			flops float64
			secs  float64
		}{{baseKey, nil, first, 0, 0}, {groupKey(r), r, last, lastOf(r.FLOPs()), r.Seconds()}} {
			seedKey := fmt.Sprint(pick.key, "\x00", r.Spec.Seed)
			if pick.run == nil && (first.Round != 0 || bases[seedKey]) {
				continue // the same base models once per seed (its sampling draws), from a round-0 evaluation
			}
			if pick.run == nil {
				bases[seedKey] = true
			} else if pick.e.Round == 0 {
				continue // still running: only its base has been evaluated
			}
			s := sampleOf(pick.e, scored, pick.flops)
			s.seconds, s.seed = pick.secs, r.Spec.Seed
			for task := range s.byTask {
				taskSet[task] = true
			}
			if pick.run != nil {
				s.from, s.gFrom = from, gFrom
				s.collapse = collapseOf(r, scored)
				if from != nil {
					s.tasks = problemTasks(r, taskCache)
				}
			}
			add(pick.key, pick.run, s)
		}
	}
	for task := range taskSet {
		t.Tasks = append(t.Tasks, task)
	}
	slices.Sort(t.Tasks)
	isBase := map[string]bool{}
	rowName := rowNames(order, rep, names)
	for i, key := range order {
		ss := groups[key]
		method := rowName[i]
		t.Rows = append(t.Rows, rowOf(method, ss, t.Tasks))
		if rep[key] == nil {
			isBase[method] = true
		} else {
			seeds := make([]uint64, len(ss))
			for i, s := range ss {
				seeds[i] = s.seed
			}
			finals = append(finals, final{method, seedOutcomes(ss, func(s sample) []float64 { return s.to }),
				seedOutcomes(ss, func(s sample) []float64 { return s.gTo }), seeds})
		}
	}
	// Base rows first.
	slices.SortStableFunc(t.Rows, func(a, b Row) int {
		return cmp.Compare(boolInt(!isBase[a.Method]), boolInt(!isBase[b.Method]))
	})
	t.Comparisons, t.finals = compareAll(finals, o.PairedSeeds), finals
	t.Members, t.Cohorts = memberTable(runs), cohortTable(runs)
	t.DoseResponse = doseResponse(runs, member)
	t.adjust()
	return t
}

// final is a method's final outcomes per seed and problem, sampled (to)
// and greedy (gTo), and each row's seed.
type final struct {
	method  string
	to, gTo [][]float64
	seeds   []uint64
}

// bySeed is x's rows in the order of seeds (each of which x's seeds hold
// once); nil when they do not.
func (f final) bySeed(x [][]float64, seeds []uint64) [][]float64 {
	if x == nil || len(f.seeds) != len(seeds) {
		return nil
	}
	out := make([][]float64, len(seeds))
	for i, s := range seeds {
		j := slices.Index(f.seeds, s)
		if j < 0 || out[i] != nil || slices.Index(f.seeds[j+1:], s) >= 0 {
			return nil
		}
		out[i] = x[j]
	}
	return out
}

// compareAll is every pair of methods compared on the same problems, in
// the table's order (A before B); with pairedSeeds, paired by seed where
// both ran the same seeds.
func compareAll(finals []final, pairedSeeds bool) []Comparison {
	var out []Comparison
	for i, a := range finals {
		for _, b := range finals[i+1:] {
			c := Comparison{A: a.method, B: b.method, Diff: crossed(b.to, a.to, false), Greedy: crossed(b.gTo, a.gTo, false)}
			if bt, bg := b.bySeed(b.to, a.seeds), b.bySeed(b.gTo, a.seeds); pairedSeeds && bt != nil && len(a.seeds) > 1 {
				c.Diff, c.Greedy, c.PairedSeeds = crossed(bt, a.to, true), crossed(bg, a.gTo, true), true
			}
			if c.Diff != nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// rowNames names the table's rows, one per key of order: a method by its
// first run (rep; labels tells apart methods of one name by their
// settings), a Base row "Base", or with several bases "Base — " and its
// models (names).
func rowNames(order []string, rep map[string]*Run, names map[string]string) []string {
	var reps []*Run
	for _, k := range order {
		if rep[k] != nil {
			reps = append(reps, rep[k])
		}
	}
	methods, next := labels(reps), 0
	out := make([]string, len(order))
	for i, k := range order {
		switch {
		case rep[k] != nil:
			out[i], next = methods[next], next+1
		case len(order)-len(reps) > 1: // runs of other base models: each its own Base row
			out[i] = "Base — " + names[k]
		default:
			out[i] = "Base"
		}
	}
	return out
}

// adjust sets every test's PHolm: Holm's correction over all the table's
// tests (each row's gains, headline and greedy, every comparison, and each
// member's gain).
func (t *Table) adjust() {
	var tests []*Paired
	for _, r := range t.Rows {
		tests = append(tests, r.Gain, r.GreedyGain)
	}
	for _, c := range t.Comparisons {
		tests = append(tests, c.Diff, c.Greedy)
	}
	for _, m := range t.Members {
		tests = append(tests, m.Gain)
	}
	tests = slices.DeleteFunc(tests, func(p *Paired) bool { return p == nil })
	ps := make([]float64, len(tests))
	for i, p := range tests {
		ps[i] = p.P
	}
	for i, adj := range stats.Holm(ps) {
		tests[i].PHolm = adj
	}
}

// collapseOf is the scored members' answer entropy and distinct answers
// in r's first and last round (their mean over members); nil without rounds.
func collapseOf(r *Run, scored []string) *Collapse {
	if len(r.Rounds) == 0 {
		return nil
	}
	c := &Collapse{}
	first, last := r.Rounds[0].Diag.Models, r.Rounds[len(r.Rounds)-1].Diag.Models
	for i, m := range r.Spec.Members {
		if !slices.Contains(scored, m.Name) {
			continue
		}
		if i >= len(first) || i >= len(last) {
			return nil
		}
		c.addShare(Collapse{EntropyFirst: first[i].AnswerEntropy, EntropyLast: last[i].AnswerEntropy,
			DistinctFirst: first[i].DistinctAnswers, DistinctLast: last[i].DistinctAnswers, ModalLast: last[i].ModalShare},
			float64(len(scored)))
	}
	for _, round := range r.Rounds {
		for i, m := range r.Spec.Members {
			if slices.Contains(scored, m.Name) && round.Diag.Flagged(i) {
				c.FlaggedRounds++
				c.Flagged = 1
				break
			}
		}
	}
	return c
}

// addShare adds o/n to c, field by field: one of n terms of a mean.
func (c *Collapse) addShare(o Collapse, n float64) {
	c.EntropyFirst += o.EntropyFirst / n
	c.EntropyLast += o.EntropyLast / n
	c.DistinctFirst += o.DistinctFirst / n
	c.DistinctLast += o.DistinctLast / n
	c.ModalLast += o.ModalLast / n
	c.Flagged += o.Flagged / n
	c.FlaggedRounds += o.FlaggedRounds / n
}

// meanCollapse averages the seeds' collapse numbers; nil if any lacks them.
func meanCollapse[S any](ss []S, pick func(S) *Collapse) *Collapse {
	out := &Collapse{}
	for _, s := range ss {
		c := pick(s)
		if c == nil {
			return nil
		}
		out.addShare(*c, float64(len(ss)))
	}
	return out
}
