package report

import (
	"fmt"
	"html"
	"image/color"
	"maps"
	"slices"
	"strings"

	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/stats"
)

// A report's plots show one line per method (the mean over its seeds,
// with a band over them), in one colour per method across every plot,
// with the legend drawn once, outside the plots, so that a sweep of fifty
// runs stays readable.

// methodRuns groups runs into methods as the table does (the spec apart
// from seed and name), in order of first appearance, with the table's
// labels (two methods of one name told apart by their settings: labels).
func methodRuns(runs []*Run) (names []string, groups [][]*Run) {
	index := map[string]int{}
	var reps []*Run
	for _, r := range runs {
		k := groupKey(r)
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
			reps = append(reps, r)
		}
		groups[i] = append(groups[i], r)
	}
	return labels(reps), groups
}

// scoredMembers are the members a run's lines average: the table's member
// when set (and the run has it), else all.
func scoredMembers(r *Run, member string) []string {
	if m := scoredMember(r, member); m != "" {
		return []string{m}
	}
	return memberNames(r.Evals[0])
}

// acrossSeeds turns per-seed values at each x into one series: the mean
// over the seeds that reached that x, with a band over them (a t-interval
// with two or more, none with one).
func acrossSeeds(name string, perSeed []map[float64]float64, xOf func(x float64) float64) series {
	xs := map[float64][]float64{}
	for _, m := range perSeed {
		for x, v := range m {
			xs[x] = append(xs[x], v)
		}
	}
	s := series{name: name}
	banded := false
	for _, x := range slices.Sorted(maps.Keys(xs)) {
		iv := seedInterval(xs[x])
		s.x, s.y, s.lo, s.hi = append(s.x, xOf(x)), append(s.y, iv.Mean), append(s.lo, iv.Lo), append(s.hi, iv.Hi)
		banded = banded || len(xs[x]) > 1
	}
	if !banded {
		s.lo, s.hi = nil, nil
	}
	return s
}

// methodSeries builds, for each method, one series of pick's value per
// evaluation (pick returns false where it has none).
func methodSeries(groups [][]*Run, labels []string, member string, pick func(r *Run, e int, names []string) (x, y float64, ok bool)) []series {
	out := make([]series, len(groups))
	for i, g := range groups {
		var perSeed []map[float64]float64
		for _, r := range g {
			m := map[float64]float64{}
			names := scoredMembers(r, member)
			for e := range r.Evals {
				if x, y, ok := pick(r, e, names); ok {
					m[x] = y
				}
			}
			perSeed = append(perSeed, m)
		}
		out[i] = acrossSeeds(labels[i], perSeed, func(x float64) float64 { return x })
		out[i].col = methodColor(i)
	}
	return out
}

// roundSeries is methodSeries over training rounds' diagnostics.
func roundSeries(groups [][]*Run, labels []string, member string, pick func(d record.ModelDiag) (float64, bool)) []series {
	out := make([]series, len(groups))
	for i, g := range groups {
		var perSeed []map[float64]float64
		for _, r := range g {
			names := scoredMembers(r, member)
			m := map[float64]float64{}
			for _, rm := range r.Rounds {
				var sum float64
				n := 0
				for mi, sm := range r.Spec.Members {
					if mi >= len(rm.Diag.Models) || !slices.Contains(names, sm.Name) {
						continue
					}
					if v, ok := pick(rm.Diag.Models[mi]); ok {
						sum += v
						n++
					}
				}
				if n > 0 {
					m[float64(rm.Round+1)] = sum / float64(n)
				}
			}
			perSeed = append(perSeed, m)
		}
		out[i] = acrossSeeds(labels[i], perSeed, func(x float64) float64 { return x })
		out[i].col = methodColor(i)
	}
	return out
}

// meanScore is the headline score of names at evaluation e, averaged.
func meanScore(e int, r *Run, names []string, byTask string) (float64, bool) {
	var sum float64
	for _, n := range names {
		var v float64
		var ok bool
		if byTask == "" {
			v, ok = score(r.Evals[e], n)
		} else {
			v, ok = scoreByTask(r.Evals[e], n)[byTask]
		}
		if !ok {
			return 0, false
		}
		sum += v
	}
	return sum / float64(len(names)), len(names) > 0
}

// legendHTML is the one legend of every plot: a swatch per method in its
// colour.
func legendHTML(labels []string) string {
	var b strings.Builder
	b.WriteString(`<ul class="legend" id="legend">`)
	for i, l := range labels {
		fmt.Fprintf(&b, `<li><span class="swatch" style="background:%s"></span>%s</li>`, hexColor(methodColor(i)), html.EscapeString(l))
	}
	b.WriteString("</ul>")
	return b.String()
}

// palette is Tableau's 20 colours, strong ones first: one colour per
// method for the methods a sweep compares (plotutil's seven repeat).
var palette = []uint32{0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf,
	0xaec7e8, 0xffbb78, 0x98df8a, 0xff9896, 0xc5b0d5, 0xc49c94, 0xf7b6d2, 0xc7c7c7, 0xdbdb8d, 0x9edae5}

// methodColor is method i's colour in every plot.
func methodColor(i int) color.Color {
	c := palette[i%len(palette)]
	return color.NRGBA{R: uint8(c >> 16), G: uint8(c >> 8), B: uint8(c), A: 255}
}

func hexColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// flopsSeries is the headline score against cumulative FLOPs: per method,
// at each evaluated round, the mean over seeds of both.
func flopsSeries(groups [][]*Run, labels []string, member string) []series {
	out := methodSeries(groups, labels, member, func(r *Run, e int, names []string) (float64, float64, bool) {
		v, ok := meanScore(e, r, names, "")
		return float64(r.Evals[e].Round), v, ok
	})
	for i, g := range groups {
		flops := make([][]float64, len(g)) // each run's cumulative FLOPs, once
		for j, r := range g {
			flops[j] = r.FLOPs()
		}
		for k, round := range out[i].x {
			var sum float64
			for _, fl := range flops {
				if round > 0 && int(round) <= len(fl) {
					sum += fl[int(round)-1]
				}
			}
			out[i].x[k] = sum / float64(len(g)) / 1e12
		}
	}
	return out
}

// predictors are the round-0 pair diagnostics a cohort's gain is plotted
// and regressed against (the dose-response), in one place for the plots
// and the table. Each is read from the scored member's side of a pair with
// its labeller (pick's scoredA: the scored member is the pair's first):
// the peer's vote accuracy is the labeller's alone, the rescue rate how
// often the labeller's vote is right where the scored member's is wrong. A
// diagnostic the record lacks (written before it existed) is missing
// (false), never 0.
var predictors = []struct {
	name string
	pick func(pp record.PairPredictors, scoredA bool) (float64, bool)
}{
	{"kappa", func(pp record.PairPredictors, _ bool) (float64, bool) { return pp.Kappa, true }},
	{"rescue rate", func(pp record.PairPredictors, scoredA bool) (float64, bool) {
		if scoredA {
			return pp.RescueAB, true
		}
		return pp.RescueBA, true
	}},
	{"shared-error rate", func(pp record.PairPredictors, _ bool) (float64, bool) { return pp.SharedError, true }},
	{"peer vote accuracy", func(pp record.PairPredictors, scoredA bool) (float64, bool) {
		if scoredA {
			return pp.AccB, true
		}
		return pp.AccA, true
	}},
	{"vote agreement", func(pp record.PairPredictors, _ bool) (float64, bool) {
		if pp.Agreement == nil {
			return 0, false
		}
		return *pp.Agreement, true
	}},
}

// labellers are the members whose votes label member m's prompts: under
// peer-ring the one before it in the spec's order, under the other peer
// rewards every other member.
func labellers(r *Run, m string) []string {
	var names []string
	at := -1
	for i, ms := range r.Spec.Members {
		names = append(names, ms.Name)
		if ms.Name == m {
			at = i
		}
	}
	if at < 0 || len(names) < 2 {
		return nil
	}
	if r.Spec.Reward.Mode == spec.PeerRing {
		return []string{names[(at-1+len(names))%len(names)]}
	}
	return slices.DeleteFunc(names, func(n string) bool { return n == m })
}

// scoredPredictor is a round-0 predictor of a cohort run as its scored
// members see it: the mean over each scored member's pairs with its
// labellers, read from that member's side; false where no such pair has
// it.
func scoredPredictor(r *Run, pp map[string]record.PairPredictors, names []string, pick func(record.PairPredictors, bool) (float64, bool)) (float64, bool) {
	var sum float64
	n := 0
	for _, m := range names {
		for _, l := range labellers(r, m) {
			if sharedDraws(r, m, l) {
				continue
			}
			p, scoredA := pp[m+"/"+l]
			if !scoredA {
				var ok bool
				if p, ok = pp[l+"/"+m]; !ok {
					continue
				}
			}
			if v, ok := pick(p, scoredA); ok {
				sum += v
				n++
			}
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// sharedDraws says whether members m and l of r drew the same round-0
// evaluation samples: records before per-member seeds (record.Eval.
// SharedDraws) of two members from one base, whose samples, votes and
// pair predictors are then the same model's twice (kappa 1, rescue 0),
// while in training they sample apart. Such a pair's predictors measure
// nothing and are left out.
func sharedDraws(r *Run, m, l string) bool {
	if len(r.Evals) == 0 || !r.Evals[0].SharedDraws() {
		return false
	}
	base := map[string]string{}
	for _, ms := range r.Spec.Members {
		base[ms.Name] = ms.Base
	}
	return base[m] != "" && base[m] == base[l]
}

// dosePoint is one cohort run: its scored members' gain (last evaluation
// minus the round-0 one) and a round-0 predictor of their pairs with their
// labellers (scoredPredictor).
type dosePoint struct {
	method  int // index into the method groups
	cohort  string
	x, gain float64
}

// dosePoints are the cohort runs of every method that has a round-0 and a
// later evaluation with pair diagnostics. A run's cohort, the unit whose
// predictor was set once, is its method. The predictors are those
// measured on the validation split when every such run has them
// (eval.predictor_split), else those of the evaluation split for all:
// one fit never mixes the two. On the evaluation split a run's pairs are
// read with each member voting on its own view where the record has that
// (record.Eval.PairsOwnView), else on the original wording.
func dosePoints(groups [][]*Run, labels []string, member string, pick func(pp record.PairPredictors, scoredA bool) (float64, bool)) (pts []dosePoint, validation bool, shared int) {
	type cohortRun struct {
		method int
		r      *Run
	}
	var runs []cohortRun
	validation = true
	for i, g := range groups {
		for _, r := range g {
			n := len(r.Evals)
			if n == 0 || r.Evals[0].Round != 0 || r.Evals[n-1].Round == 0 || len(r.Evals[0].Pairs) == 0 {
				continue
			}
			runs = append(runs, cohortRun{i, r})
			validation = validation && len(r.Evals[0].PairsValidation) > 0
		}
	}
	for _, c := range runs {
		names := scoredMembers(c.r, member)
		a, okA := meanScore(0, c.r, names, "")
		b, okB := meanScore(len(c.r.Evals)-1, c.r, names, "")
		if !okA || !okB {
			continue
		}
		pp := c.r.Evals[0].Pairs
		switch {
		case validation:
			pp = c.r.Evals[0].PairsValidation
		case len(c.r.Evals[0].PairsOwnView) > 0:
			pp = c.r.Evals[0].PairsOwnView // a rephrased member's votes on the wording it labels with
		}
		x, ok := scoredPredictor(c.r, pp, names, pick)
		if !ok {
			if allSharedDraws(c.r, names) {
				shared++
			}
			continue
		}
		pts = append(pts, dosePoint{method: c.method, cohort: labels[c.method], x: x, gain: b - a})
	}
	return pts, validation && len(pts) > 0, shared
}

// allSharedDraws says whether every pair of the scored members with their
// labellers drew shared samples (sharedDraws): the run has no predictor.
func allSharedDraws(r *Run, names []string) bool {
	n := 0
	for _, m := range names {
		for _, l := range labellers(r, m) {
			if !sharedDraws(r, m, l) {
				return false
			}
			n++
		}
	}
	return n > 0
}

// predictorScatter is each cohort run's gain against a round-0 predictor,
// coloured by method, with the least-squares line through all of them.
func predictorScatter(groups [][]*Run, labels []string, member string, pick func(pp record.PairPredictors, scoredA bool) (float64, bool)) []series {
	pts, _, _ := dosePoints(groups, labels, member, pick)
	var out []series
	at := map[int]int{}
	var xs, ys []float64
	for _, p := range pts {
		k, ok := at[p.method]
		if !ok {
			k = len(out)
			at[p.method] = k
			out = append(out, series{name: labels[p.method], col: methodColor(p.method), scatter: true})
		}
		out[k].x, out[k].y = append(out[k].x, p.x), append(out[k].y, p.gain)
		xs, ys = append(xs, p.x), append(ys, p.gain)
	}
	if len(xs) >= 2 {
		slope, icept := stats.Fit(xs, ys)
		lo, hi := slices.Min(xs), slices.Max(xs)
		out = append(out, series{name: fmt.Sprintf("fit: slope %+.3f", slope), col: color.Black,
			x: []float64{lo, hi}, y: []float64{icept + slope*lo, icept + slope*hi}})
	}
	return out
}

// DoseResponse is the slope of cohorts' gains on one round-0 predictor,
// with its interval over cohorts (stats.ClusteredSlope: a cohort's seeds
// resampled together).
type DoseResponse struct {
	Predictor string      `json:"predictor"`
	Fit       stats.Slope `json:"fit"`
	// Split is "validation" when the predictors were measured on the
	// validation split (eval.predictor_split), "" on the evaluation split.
	Split string `json:"split,omitempty"`
	// SharedDraws is the number of cohort runs left out because their
	// predictors came from samples the members shared (sharedDraws).
	SharedDraws int `json:"left_out_shared_draws,omitempty"`
}

// name is the predictor with the split it was measured on, where that is
// not the evaluation's.
func (d DoseResponse) name() string {
	if d.Split != "" {
		return d.Predictor + " (" + d.Split + ")"
	}
	return d.Predictor
}

// runs is the number of cohort runs fitted, with those left out for
// shared draws.
func (d DoseResponse) runs() string {
	if d.SharedDraws > 0 {
		return fmt.Sprintf("%d (%d left out: members' shared evaluation draws)", d.Fit.Points, d.SharedDraws)
	}
	return fmt.Sprint(d.Fit.Points)
}

// interval is the slope's interval as text, or why there is none.
func (d DoseResponse) interval() string {
	switch {
	case d.Fit.Constant:
		return "(the predictor does not vary)"
	case d.Fit.CI == nil && d.Fit.Clusters >= 3:
		return "(it varies within too few cohorts)"
	case d.Fit.CI == nil:
		return "(fewer than 3 cohorts)"
	}
	return fmt.Sprintf("[%+.3f, %+.3f]", d.Fit.CI.Lo, d.Fit.CI.Hi)
}

// doseResponse fits each predictor across the runs' cohorts; none when
// fewer than two cohort runs have the diagnostics.
func doseResponse(runs []*Run, member string) []DoseResponse {
	labels, groups := methodRuns(runs)
	var out []DoseResponse
	for _, p := range predictors {
		pts, validation, shared := dosePoints(groups, labels, member, p.pick)
		if len(pts) < 2 {
			continue
		}
		split := ""
		if validation {
			split = "validation"
		}
		x, y, cl := make([]float64, len(pts)), make([]float64, len(pts)), make([]string, len(pts))
		for i, pt := range pts {
			x[i], y[i], cl[i] = pt.x, pt.gain, pt.cohort
		}
		out = append(out, DoseResponse{Predictor: p.name, Fit: stats.ClusteredSlope(x, y, cl, 1), Split: split, SharedDraws: shared})
	}
	return out
}
