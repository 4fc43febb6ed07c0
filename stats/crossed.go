package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Crossed is a difference between two methods estimated from outcomes
// that vary both by training seed and by problem: its mean, 95% interval
// and two-sided p with both sources of variance in them, the minimum
// difference the design detects (80% power at the 5% level), and the p
// adjusted for the other tests of its table (Holm), when set.
type Crossed struct {
	Interval
	P float64 `json:"p"`
	// PAdjusted is P after the table's multiplicity correction (Holm),
	// set by the table's builder; 0 when not corrected yet.
	PAdjusted float64 `json:"p_adjusted,omitempty"`
	// SE is the difference's standard error, and DF the degrees of
	// freedom of its t distribution (Welch-Satterthwaite).
	SE float64 `json:"se"`
	DF float64 `json:"df"`
	// SeedShare is the share of SE^2 that comes from training seeds (the
	// rest from which problems were drawn).
	SeedShare float64 `json:"seed_share"`
	// MDD is the smallest true difference the design finds significant at
	// the 5% level four times in five: (t_.975 + t_.8) x SE.
	MDD   float64 `json:"min_detectable"`
	Seeds [2]int  `json:"seeds"` // of a and of b
	Probs int     `json:"problems"`
}

// MDDAt is the smallest true difference a test at two-sided level alpha
// with this standard error and these degrees of freedom finds four times
// in five: (t_{1-alpha/2} + t_.8) x SE. MDDAt(0.05) is Crossed.MDD; at
// alpha/m it is what a family of m tests corrected for multiplicity
// (Bonferroni, Holm's strictest step) can see.
func MDDAt(se, df, alpha float64) float64 {
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: math.Max(df, 1)}
	return (t.Quantile(1-alpha/2) + t.Quantile(0.8)) * se
}

// TOST is the p of two one-sided tests that a difference with this mean,
// standard error and degrees of freedom lies within (-margin, +margin):
// the larger of the p that it is above -margin and the p that it is below
// +margin. Small, it says the difference is smaller than the margin, which
// a large p of the difference itself never says.
func TOST(mean, se, df, margin float64) float64 {
	if margin <= 0 {
		return 1
	}
	if se == 0 {
		if math.Abs(mean) < margin {
			return 0
		}
		return 1
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: math.Max(df, 1)}
	above := 1 - t.CDF((mean+margin)/se) // H0: difference <= -margin
	below := t.CDF((mean - margin) / se) // H0: difference >= +margin
	return math.Max(above, below)
}

// CrossedDiff estimates mean(b) - mean(a), where a[s][p] is the outcome of
// problem p under training seed s of method a (the same problems, in the
// same order, for every seed and for b). Seeds and problems are crossed
// random factors (a two-way random-effects design), so the variance of
// the difference has a seed part, the variance of each method's per-seed
// means over its seeds, and a problem part, the variance over problems of
// the seed-averaged difference; each of those also holds the seed x
// problem residual once, which is estimated from the two-way table and
// taken out once (the method of moments; the result never falls below
// the larger part). The interval and p use Student's t with
// Welch-Satterthwaite degrees of freedom, so three seeds give the wide
// interval three seeds deserve. With pairedSeeds, a and b are the same
// runs before and after training (a[s] and b[s] share seed s), and the
// seed part is that of the per-seed differences. With one seed per method
// the seed part is unknown and left out: the result is the paired
// difference over problems, with the problems' degrees of freedom.
func CrossedDiff(a, b [][]float64, pairedSeeds bool) Crossed {
	c := Crossed{Seeds: [2]int{len(a), len(b)}, P: 1}
	if len(a) == 0 || len(b) == 0 || (pairedSeeds && len(a) != len(b)) {
		return c
	}
	checkProblems(append(append([][]float64{}, a...), b...))
	if !pairedSeeds {
		c = Combination([]Arm{{Weight: -1, Outcomes: a}, {Weight: 1, Outcomes: b}})
		c.Seeds = [2]int{len(a), len(b)}
		return c
	}
	d := make([][]float64, len(a))
	for s := range a {
		d[s] = make([]float64, len(a[s]))
		for p := range d[s] {
			d[s][p] = b[s][p] - a[s][p]
		}
	}
	// The problem part from the two methods' seed means, as the
	// unpaired difference's.
	ma, mb := seedMeans(a), seedMeans(b)
	for p := range ma {
		ma[p] = mb[p] - ma[p]
	}
	c = combine([]Arm{{Weight: 1, Outcomes: d}}, ma)
	c.Mean = grandMean(b) - grandMean(a)
	c.finish()
	c.Seeds = [2]int{len(a), len(b)}
	return c
}

// Arm is one method's outcomes in a linear contrast: Outcomes[s][p] is
// problem p under its training seed s, and Weight its coefficient.
type Arm struct {
	Weight   float64
	Outcomes [][]float64
}

// Combination estimates sum_i Weight_i x mean(arm i) over arms trained
// from independent seeds and scored on the same problems (in the same
// order): a pooled contrast, such as the mean of several methods minus a
// common control, whose members share that control and so are not
// independent tests. The variance is CrossedDiff's: a seed part per arm
// (Weight^2 x the variance of its per-seed means over its seeds), a
// problem part (the variance over problems of the weighted, seed-averaged
// outcome), the seed x problem residual counted once, and Student's t with
// Welch-Satterthwaite degrees of freedom. CrossedDiff(a, b, false) is
// Combination of a at -1 and b at +1.
func Combination(arms []Arm) Crossed { return combine(arms, nil) }

// combine is Combination with the seed-averaged outcome per problem given
// (dp; nil: the weighted sum of the arms' seed means).
func combine(arms []Arm, dp []float64) Crossed {
	c := Crossed{P: 1}
	var all [][]float64
	for _, a := range arms {
		if len(a.Outcomes) == 0 {
			return c
		}
		all = append(all, a.Outcomes...)
	}
	if len(all) == 0 {
		return c
	}
	np := checkProblems(all)
	c.Probs = np
	if np == 0 {
		return c
	}
	var parts []part
	resid := 0.0 // the residual's share of the parts, counted once too often
	given := dp != nil
	if !given {
		dp = make([]float64, np)
	}
	for _, a := range arms {
		x, w := a.Outcomes, a.Weight
		c.Mean += w * grandMean(x)
		for p, m := range seedMeans(x) {
			if !given {
				dp[p] += w * m
			}
		}
		if len(x) < 2 {
			continue
		}
		m := make([]float64, len(x))
		for s, row := range x {
			m[s] = mean(row)
		}
		sd := stddev(m)
		parts = append(parts, part{w * w * sd * sd / float64(len(x)), float64(len(x) - 1)})
		resid += w * w * residualVar(x) / float64(len(x)*np)
	}
	seedV := 0.0
	for _, pt := range parts {
		seedV += pt.v
	}
	sdp := stddev(dp)
	probV := sdp * sdp / float64(np)
	parts = append(parts, part{probV, float64(np - 1)})
	v := math.Max(seedV+probV-resid, math.Max(seedV, probV))
	c.DF = satterthwaite(parts, float64(np-1))
	c.SE = math.Sqrt(v)
	if v > 0 {
		c.SeedShare = math.Min(1, seedV/(seedV+probV))
	}
	c.finish()
	return c
}

// CombinationPaired is Combination for arms run on the same training
// seeds: row s of every arm's Outcomes is seed s (the same base, the same
// data order), so each seed's weighted combination is one outcome and the
// seed part is that of those combinations, as CrossedDiff's pairedSeeds.
// Seeds shared between arms cancel out of it; it needs every arm to have
// the same number of seeds (else it is Combination's P 1, empty).
func CombinationPaired(arms []Arm) Crossed {
	if len(arms) == 0 || len(arms[0].Outcomes) == 0 {
		return Crossed{P: 1}
	}
	ns := len(arms[0].Outcomes)
	var all [][]float64
	for _, a := range arms {
		if len(a.Outcomes) != ns {
			return Crossed{P: 1}
		}
		all = append(all, a.Outcomes...)
	}
	np := checkProblems(all)
	l := make([][]float64, ns)
	for s := range l {
		l[s] = make([]float64, np)
		for _, a := range arms {
			for p, v := range a.Outcomes[s] {
				l[s][p] += a.Weight * v
			}
		}
	}
	return combine([]Arm{{Weight: 1, Outcomes: l}}, nil)
}

// Pool is sum_i weights[i] x cs[i] for independent estimates (one contrast
// from each of several studies, with their own runs and problems): its SE
// is the square root of sum_i weights[i]^2 x SE_i^2, with
// Welch-Satterthwaite degrees of freedom over the estimates'. Weights
// summing to 1 give a weighted mean of the estimates.
func Pool(cs []Crossed, weights []float64) Crossed {
	if len(cs) != len(weights) {
		panic("stats: Pool wants one weight per estimate")
	}
	c := Crossed{P: 1}
	var parts []part
	var v float64
	for i, x := range cs {
		w := weights[i]
		c.Mean += w * x.Mean
		c.Probs += x.Probs
		parts = append(parts, part{w * w * x.SE * x.SE, x.DF})
		v += w * w * x.SE * x.SE
	}
	c.SE = math.Sqrt(v)
	c.DF = satterthwaite(parts, 1)
	c.finish()
	return c
}

// part is one independent share of a variance and its degrees of freedom.
type part struct{ v, df float64 }

// satterthwaite is the Welch-Satterthwaite degrees of freedom of the sum
// of parts (or, when no part has any, fallback).
func satterthwaite(parts []part, fallback float64) float64 {
	var num, den float64
	for _, pt := range parts {
		num += pt.v
		if pt.df > 0 {
			den += pt.v * pt.v / pt.df
		}
	}
	if den > 0 {
		return num * num / den
	}
	return fallback
}

// finish sets the interval, MDD and p from Mean, SE and DF.
func (c *Crossed) finish() {
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: math.Max(c.DF, 1)}
	q := t.Quantile(0.975)
	c.Lo, c.Hi = c.Mean-q*c.SE, c.Mean+q*c.SE
	c.MDD = (q + t.Quantile(0.8)) * c.SE
	switch {
	case c.SE == 0 && c.Mean == 0:
		c.P = 1
	case c.SE == 0:
		c.P = 0
	default:
		c.P = math.Min(1, 2*t.CDF(-math.Abs(c.Mean)/c.SE))
	}
}

// checkProblems is the number of problems every row of x covers; it
// panics when they differ.
func checkProblems(x [][]float64) int {
	np := len(x[0])
	for _, row := range x {
		if len(row) != np {
			panic("stats: crossed outcomes cover different numbers of problems")
		}
	}
	return np
}

// residualVar is the seed x problem residual variance of a two-way table
// (x[s][p] minus its seed and problem means plus the grand mean).
func residualVar(x [][]float64) float64 {
	ns, np := len(x), len(x[0])
	if ns < 2 || np < 2 {
		return 0
	}
	col, g := seedMeans(x), grandMean(x)
	var ss float64
	for _, row := range x {
		m := mean(row)
		for p, v := range row {
			e := v - m - col[p] + g
			ss += e * e
		}
	}
	return ss / float64((ns-1)*(np-1))
}

// ProblemsOnly is the same difference bootstrapped over problems alone,
// after averaging the seeds: what ignoring seed variance would report
// (kept to show the difference it makes).
func ProblemsOnly(a, b [][]float64, seed uint64) (Interval, float64) {
	return PairedDiff(seedMeans(a), seedMeans(b), seed)
}

// Holm adjusts p-values for the family of tests they came from (Holm's
// step-down method: controls the chance of any false rejection at the
// nominal level, with no assumption on how the tests depend on each
// other). The result is in the order of ps.
func Holm(ps []float64) []float64 {
	idx := make([]int, len(ps))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		switch {
		case ps[i] < ps[j]:
			return -1
		case ps[i] > ps[j]:
			return 1
		}
		return 0
	})
	out := make([]float64, len(ps))
	run := 0.0
	for rank, i := range idx {
		adj := math.Min(1, float64(len(ps)-rank)*ps[i])
		run = math.Max(run, adj) // adjusted p-values never decrease with rank
		out[i] = run
	}
	return out
}

func grandMean(x [][]float64) float64 {
	var s float64
	n := 0
	for _, row := range x {
		for _, v := range row {
			s += v
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

func seedMeans(x [][]float64) []float64 {
	if len(x) == 0 {
		return nil
	}
	out := make([]float64, len(x[0]))
	for _, row := range x {
		for p, v := range row {
			out[p] += v / float64(len(x))
		}
	}
	return out
}

func stddev(x []float64) float64 {
	m := mean(x)
	var s float64
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	if len(x) < 2 {
		return 0
	}
	return math.Sqrt(s / float64(len(x)-1))
}
