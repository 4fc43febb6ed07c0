package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// simulate draws a method's outcomes: seeds x problems of right (1) or
// wrong (0), with problem difficulty shared by every method and seed
// (difficulty[p]), a per-seed shift of the log-odds with standard
// deviation seedSD, and a method effect on the log-odds.
func simulate(r *rand.Rand, difficulty []float64, seeds int, seedSD, effect float64) [][]float64 {
	out := make([][]float64, seeds)
	for s := range out {
		shift := r.NormFloat64() * seedSD
		out[s] = make([]float64, len(difficulty))
		for p, d := range difficulty {
			if r.Float64() < 1/(1+math.Exp(-(d+shift+effect))) {
				out[s][p] = 1
			}
		}
	}
	return out
}

func problems(r *rand.Rand, n int) []float64 {
	d := make([]float64, n)
	for i := range d {
		d[i] = r.NormFloat64() * 1.5
	}
	return d
}

// TestSeedVarianceWidensTheInterval: where training seeds differ a lot
// (a seed-heavy design), resampling seeds and problems gives a wider
// interval than bootstrapping problems after averaging seeds; with no
// seed variance the two agree.
func TestSeedVarianceWidensTheInterval(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	d := problems(r, 400)
	a, b := simulate(r, d, 5, 0.6, 0), simulate(r, d, 5, 0.6, 0)
	c := CrossedDiff(a, b, false)
	po, _ := ProblemsOnly(a, b, 1)
	if w, wpo := c.Hi-c.Lo, po.Hi-po.Lo; w < 1.5*wpo {
		t.Errorf("seed-heavy: crossed width %.3f, problems-only %.3f; want the crossed clearly wider", w, wpo)
	}
	a, b = simulate(r, d, 5, 0, 0), simulate(r, d, 5, 0, 0)
	c = CrossedDiff(a, b, false)
	po, _ = ProblemsOnly(a, b, 1)
	if w, wpo := c.Hi-c.Lo, po.Hi-po.Lo; math.Abs(w-wpo) > 0.35*wpo {
		t.Errorf("no seed variance: crossed width %.3f, problems-only %.3f; want about equal", w, wpo)
	}
}

// TestEqualMethodsDoNotDiffer: eight methods equal by construction (one
// process, independent seeds), every pair compared: bootstrapping
// problems alone calls some pairs different, while the crossed bootstrap
// with Holm's correction over the table calls none.
func TestEqualMethodsDoNotDiffer(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	d := problems(r, 300)
	var methods [][][]float64
	for range 8 {
		methods = append(methods, simulate(r, d, 5, 0.4, 0))
	}
	var ps []float64
	naive := 0
	for i := range methods {
		for j := i + 1; j < len(methods); j++ {
			ps = append(ps, CrossedDiff(methods[i], methods[j], false).P)
			if _, p := ProblemsOnly(methods[i], methods[j], 1); p < 0.05 {
				naive++
			}
		}
	}
	if naive == 0 {
		t.Error("problems-only found no false difference: the test's design shows nothing")
	}
	for k, p := range Holm(ps) {
		if p < 0.05 {
			t.Errorf("comparison %d: Holm-adjusted p %.3f for two equal methods", k, p)
		}
	}
	t.Logf("28 comparisons of equal methods: %d significant by problems alone", naive)
}

// TestCrossedFindsARealDifference: a method better by construction is
// found better, its interval covers the true difference, and the minimum
// detectable difference is below it; pairing seeds (before and after the
// same runs) removes the seed shift from the difference.
func TestCrossedFindsARealDifference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	d := problems(r, 500)
	a := simulate(r, d, 6, 0.3, 0)
	b := simulate(r, d, 6, 0.3, 0.8)
	c := CrossedDiff(a, b, false)
	truth := grandMean(b) - grandMean(a)
	if c.P >= 0.01 || c.Lo > truth || c.Hi < truth || c.MDD >= c.Mean || c.Seeds != [2]int{6, 6} || c.Probs != 500 {
		t.Errorf("a real difference: %+v (observed %.3f)", c, truth)
	}
	// Before and after on the same seeds: b[s] is a[s] with some problems
	// newly solved, so the seed shift cancels in the pairing.
	after := make([][]float64, len(a))
	for s := range a {
		after[s] = append([]float64(nil), a[s]...)
		for p := range after[s] {
			if after[s][p] == 0 && r.Float64() < 0.1 {
				after[s][p] = 1
			}
		}
	}
	paired, unpaired := CrossedDiff(a, after, true), CrossedDiff(a, after, false)
	if paired.Hi-paired.Lo >= unpaired.Hi-unpaired.Lo || paired.P >= 0.01 {
		t.Errorf("paired seeds %+v, unpaired %+v: pairing should narrow the interval", paired, unpaired)
	}
}

func TestHolm(t *testing.T) {
	got := Holm([]float64{0.01, 0.04, 0.03, 0.5})
	want := []float64{0.04, 0.09, 0.09, 0.5}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("Holm %v, want %v", got, want)
		}
	}
	if len(Holm(nil)) != 0 {
		t.Error("no tests")
	}
}

// TestCrossedIsCalibrated: over many pairs of methods equal by
// construction, with seed and problem variance both present, about 5% of
// the comparisons come out significant at the 5% level (the interval
// covers the truth about 95% of the time): neither the anti-conservative
// rate of ignoring seeds nor a uselessly wide interval.
func TestCrossedIsCalibrated(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const trials = 400
	false5 := 0
	for range trials {
		d := problems(r, 200)
		if c := CrossedDiff(simulate(r, d, 5, 0.4, 0), simulate(r, d, 5, 0.4, 0), false); c.P < 0.05 {
			false5++
		}
	}
	if rate := float64(false5) / trials; rate < 0.02 || rate > 0.09 {
		t.Errorf("equal methods significant in %.1f%% of %d comparisons, want about 5%%", 100*rate, trials)
	} else {
		t.Logf("false positives: %.1f%%", 100*rate)
	}
}

// TestMDDAtTheCorrectedLevel: MDDAt at 5% is the difference's own MDD; at
// 5% / 8 (eight planned contrasts) it is larger by the ratio of the t
// quantiles (with many degrees of freedom, (z_.99688 + z_.8) / (z_.975 +
// z_.8) = (2.734 + 0.842) / (1.960 + 0.842) = 1.276).
func TestMDDAtTheCorrectedLevel(t *testing.T) {
	a := [][]float64{{0, 1, 0, 1, 1, 0, 1, 0, 0, 1}, {1, 1, 0, 0, 1, 0, 1, 1, 0, 1}}
	b := [][]float64{{1, 1, 0, 1, 1, 1, 1, 0, 1, 1}, {1, 1, 1, 0, 1, 0, 1, 1, 1, 1}}
	c := CrossedDiff(a, b, false)
	if got := MDDAt(c.SE, c.DF, 0.05); math.Abs(got-c.MDD) > 1e-12 {
		t.Errorf("MDDAt(5%%) %v, want the MDD %v", got, c.MDD)
	}
	if r := MDDAt(1, 1e6, 0.05/8) / MDDAt(1, 1e6, 0.05); math.Abs(r-1.276) > 0.002 {
		t.Errorf("MDD at 5%%/8 over MDD at 5%%: %.4f, want 1.276", r)
	}
}

// TestTOST: a difference well inside the margin is equivalent (small p),
// one whose interval reaches past the margin is not, and the p is the
// larger one-sided p: for mean 0.01, SE 0.005 and margin 0.02 with many
// degrees of freedom, P(Z > (0.01+0.02)/0.005) and P(Z < (0.01-0.02)/0.005)
// are 1e-9 and 0.0228, so 0.0228.
func TestTOST(t *testing.T) {
	if p := TOST(0.01, 0.005, 1e6, 0.02); math.Abs(p-0.02275) > 1e-4 {
		t.Errorf("TOST p %v, want 0.0228", p)
	}
	if p := TOST(0, 0.005, 1e6, 0.02); p > 1e-4 {
		t.Errorf("a zero difference, SE a quarter of the margin: p %v, want < 1e-4", p)
	}
	if p := TOST(0.015, 0.01, 1e6, 0.02); p < 0.3 {
		t.Errorf("a difference whose interval passes the margin: p %v, want large", p)
	}
	if p := TOST(-0.01, 0.005, 1e6, 0.02); math.Abs(p-0.02275) > 1e-4 {
		t.Errorf("TOST is symmetric: p %v, want 0.0228", p)
	}
}

// TestPooledContrastIsCalibrated: the mean of four methods minus a common
// control (three seeds each, as the studies run them), with no method
// better than another, is significant about one time in twenty (a little
// more: with three seeds the seed part's two degrees of freedom make the
// crossed test run at 7-9% under this seed-heavy null, two methods
// compared alone included). Treating
// the four contrasts with that control as independent estimates (Pool of
// the four CrossedDiffs) leaves out that they share the control's seeds
// and is wrong far more often; the pooled contrast also finds a shared
// effect more often than one of its contrasts alone.
func TestPooledContrastIsCalibrated(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const trials = 400
	var pooled, naive, found, foundOne int
	quarter := []float64{0.25, 0.25, 0.25, 0.25}
	for range trials {
		d := problems(r, 150)
		for _, effect := range []float64{0, 0.25} {
			control := simulate(r, d, 3, 0.4, 0)
			arms := []Arm{{Weight: -1, Outcomes: control}}
			var each []Crossed
			for range 4 {
				x := simulate(r, d, 3, 0.4, effect)
				arms = append(arms, Arm{Weight: 0.25, Outcomes: x})
				each = append(each, CrossedDiff(control, x, false))
			}
			c := Combination(arms)
			switch {
			case effect == 0:
				pooled += boolInt(c.P < 0.05)
				naive += boolInt(Pool(each, quarter).P < 0.05)
			default:
				found += boolInt(c.P < 0.05)
				foundOne += boolInt(each[0].P < 0.05)
			}
		}
	}
	rate, naiveRate := float64(pooled)/trials, float64(naive)/trials
	if rate < 0.02 || rate > 0.10 {
		t.Errorf("a pooled contrast of equal methods significant in %.1f%% of %d trials, want about 5%%", 100*rate, trials)
	}
	if naiveRate < 2*rate {
		t.Errorf("pooling the contrasts as if independent: %.1f%% false positives, the pooled contrast %.1f%%: the shared control should make the naive pool overconfident", 100*naiveRate, 100*rate)
	}
	if found <= foundOne {
		t.Errorf("a shared effect found by the pooled contrast in %d of %d trials, by one contrast in %d", found, trials, foundOne)
	}
	t.Logf("false positives %.1f%% (naive pool %.1f%%); power %.0f%% pooled, %.0f%% one contrast", 100*rate, 100*naiveRate, 100*float64(found)/trials, 100*float64(foundOne)/trials)
}

// TestPoolOfIndependentStudies: one contrast from each of two studies
// (their own problems and runs) pooled with equal weights is calibrated
// under no difference, its SE is the weighted root sum of squares, and
// the pool of one estimate at weight 1 is that estimate.
func TestPoolOfIndependentStudies(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const trials = 400
	false5 := 0
	for range trials {
		var cs []Crossed
		for _, n := range []int{200, 120} {
			d := problems(r, n)
			cs = append(cs, CrossedDiff(simulate(r, d, 3, 0.4, 0), simulate(r, d, 3, 0.4, 0), false))
		}
		p := Pool(cs, []float64{0.5, 0.5})
		if want := math.Sqrt(cs[0].SE*cs[0].SE+cs[1].SE*cs[1].SE) / 2; math.Abs(p.SE-want) > 1e-15 {
			t.Fatalf("pooled SE %v, want %v", p.SE, want)
		}
		false5 += boolInt(p.P < 0.05)
	}
	if rate := float64(false5) / trials; rate < 0.02 || rate > 0.09 {
		t.Errorf("pooled equal methods significant in %.1f%% of %d trials, want about 5%%", 100*rate, trials)
	}
	d := problems(r, 50)
	one := CrossedDiff(simulate(r, d, 3, 0.4, 0), simulate(r, d, 3, 0.4, 0.3), false)
	p := Pool([]Crossed{one}, []float64{1})
	if math.Abs(p.Mean-one.Mean) > 1e-15 || math.Abs(p.Lo-one.Lo) > 1e-12 || math.Abs(p.P-one.P) > 1e-12 {
		t.Errorf("the pool of one estimate %+v, want %+v", p.Interval, one.Interval)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCombinationPairedCancelsSharedSeeds: when the arms' seeds share
// their effect (the same base and data order per seed), pairing them by
// seed takes that variance out: the same mean, a narrower interval, and
// no more than 5% false positives with no difference (fewer: see below);
// with one arm pair it is CrossedDiff's paired difference.
func TestCombinationPairedCancelsSharedSeeds(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	shared := func(d []float64, shifts []float64, effect float64) [][]float64 {
		out := make([][]float64, len(shifts))
		for s, shift := range shifts {
			out[s] = make([]float64, len(d))
			for p, dp := range d {
				if r.Float64() < 1/(1+math.Exp(-(dp+shift+effect))) {
					out[s][p] = 1
				}
			}
		}
		return out
	}
	const trials = 300
	false5, narrower := 0, 0
	for range trials {
		d := problems(r, 150)
		shifts := make([]float64, 5)
		for s := range shifts {
			shifts[s] = r.NormFloat64() * 0.6
		}
		ctl := shared(d, shifts, 0)
		arms := []Arm{{Weight: -1, Outcomes: ctl}}
		for range 3 {
			arms = append(arms, Arm{Weight: 1.0 / 3, Outcomes: shared(d, shifts, 0)})
		}
		p, u := CombinationPaired(arms), Combination(arms)
		if math.Abs(p.Mean-u.Mean) > 1e-12 {
			t.Fatalf("paired mean %v, unpaired %v", p.Mean, u.Mean)
		}
		narrower += boolInt(p.SE < u.SE)
		false5 += boolInt(p.P < 0.05)
	}
	// Conservative rather than about 5%: with the seeds' effect cancelled
	// the seed part and the problem part estimate one variance, and the
	// estimate never falls below the larger of the two (the seed part has
	// 4 degrees of freedom, so it is often the larger by chance).
	if rate := float64(false5) / trials; rate > 0.10 {
		t.Errorf("paired pooled contrast of equal arms significant in %.1f%% of %d trials, want at most about 5%%", 100*rate, trials)
	}
	if narrower < trials*9/10 {
		t.Errorf("pairing by shared seeds narrowed the interval in %d of %d trials", narrower, trials)
	}
	d := problems(r, 40)
	a, b := simulate(r, d, 4, 0.4, 0), simulate(r, d, 4, 0.4, 0.3)
	c, want := CombinationPaired([]Arm{{Weight: -1, Outcomes: a}, {Weight: 1, Outcomes: b}}), CrossedDiff(a, b, true)
	if math.Abs(c.Mean-want.Mean) > 1e-12 || math.Abs(c.SE-want.SE) > 1e-12 || math.Abs(c.DF-want.DF) > 1e-9 {
		t.Errorf("one pair: %+v, want CrossedDiff's paired %+v", c, want)
	}
	t.Logf("false positives %.1f%%, narrower in %d of %d", 100*float64(false5)/trials, narrower, trials)
}
