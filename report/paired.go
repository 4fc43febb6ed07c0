package report

// The paired statistics of the table: a method's outcomes problem by
// problem and seed by seed, the gain over its base on the same problems,
// and the interval over seeds and problems.

import (
	"math"

	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/stats"
)

// crossed is to minus from over the same problems, from each seed's
// outcomes (pairedSeeds: from[s] and to[s] are one run before and after);
// nil when either is missing.
func crossed(from, to [][]float64, pairedSeeds bool) *Paired {
	if from == nil || to == nil || len(from[0]) != len(to[0]) {
		return nil
	}
	c := stats.CrossedDiff(from, to, pairedSeeds)
	p := &Paired{Diff: c.Interval, P: c.P, Problems: c.Probs, Seeds: c.Seeds, MDD: c.MDD, SE: c.SE, DF: c.DF, SeedShare: c.SeedShare}
	if len(from) > 1 || len(to) > 1 {
		po, _ := stats.ProblemsOnly(from, to, 1)
		p.ProblemsOnly = &po
	}
	return p
}

// perProblem is the headline outcome of each problem (the share of right
// samples when the evaluation sampled, else greedy right or not; greedy
// always with greedy set), averaged over members; nil when the evaluation
// did not keep per-problem outcomes.
func perProblem(e record.Eval, members []string, greedy bool) []float64 {
	var out []float64
	for _, name := range members {
		m := e.Members[name]
		x := m.Scores()
		if m.Samples > 0 && !greedy {
			x = m.SampledScores()
		}
		if len(x) == 0 || (out != nil && len(x) != len(out)) {
			return nil
		}
		if out == nil {
			out = make([]float64, len(x))
		}
		for i, v := range x {
			out[i] += v / float64(len(members))
		}
	}
	return out
}

// pairedGain compares each seed's per-problem outcomes after with its
// own before; nil unless every seed kept them on the same problems.
func pairedGain[S any](ss []S, pair func(S) (from, to []float64)) *Paired {
	from := seedOutcomes(ss, func(s S) []float64 { a, _ := pair(s); return a })
	to := seedOutcomes(ss, func(s S) []float64 { _, b := pair(s); return b })
	return crossed(from, to, true)
}

// seedOutcomes is each seed's per-problem outcomes; nil unless every seed
// kept them on the same number of problems.
func seedOutcomes[S any](ss []S, pick func(S) []float64) [][]float64 {
	var out [][]float64
	for _, s := range ss {
		x := pick(s)
		if x == nil || (out != nil && len(x) != len(out[0])) {
			return nil
		}
		out = append(out, x)
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func lastOf(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	return x[len(x)-1]
}

// level is the mean of outcomes per seed and problem with a 95% interval
// that holds both the seeds' variance and the problems' (so never
// narrower than what evaluating on other problems alone would vary by);
// nil without outcomes.
func level(x [][]float64) *stats.Interval {
	if x == nil || len(x[0]) == 0 {
		return nil
	}
	iv := stats.CrossedDiff([][]float64{make([]float64, len(x[0]))}, x, false).Interval
	return &iv
}

// seedInterval is the mean with a 95% t-interval over seeds (the mean
// alone, as its own bounds, for one seed).
func seedInterval(x []float64) stats.Interval {
	n := float64(len(x))
	var mean float64
	for _, v := range x {
		mean += v / n
	}
	if len(x) < 2 {
		return stats.Interval{Mean: mean, Lo: mean, Hi: mean}
	}
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	se := math.Sqrt(ss/(n-1)) / math.Sqrt(n)
	tq := []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262}
	q := 1.96
	if len(x)-2 < len(tq) {
		q = tq[len(x)-2]
	}
	return stats.Interval{Mean: mean, Lo: mean - q*se, Hi: mean + q*se}
}
