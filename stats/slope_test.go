package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// cohorts builds points for n cohorts of k seeds: a cohort's x is drawn
// once, its y is slope*x plus a cohort effect (shared by its seeds) and
// per-seed noise.
func cohorts(n, k int, slope, cohortSD, seedSD float64, seed uint64) (x, y []float64, cluster []string) {
	r := rand.New(rand.NewPCG(seed, 1))
	for c := range n {
		cx, effect := r.Float64(), r.NormFloat64()*cohortSD
		for range k {
			x = append(x, cx)
			y = append(y, slope*cx+effect+r.NormFloat64()*seedSD)
			cluster = append(cluster, fmt.Sprint(c))
		}
	}
	return x, y, cluster
}

// TestFitIsExactOnALine: points on a line give its slope and intercept.
func TestFitIsExactOnALine(t *testing.T) {
	b, a := Fit([]float64{0, 1, 2, 4}, []float64{1, 3, 5, 9})
	if math.Abs(b-2) > 1e-12 || math.Abs(a-1) > 1e-12 {
		t.Fatalf("slope %v intercept %v, want 2 and 1", b, a)
	}
	if b, a := Fit([]float64{3, 3}, []float64{1, 2}); b != 0 || a != 1.5 {
		t.Fatalf("one distinct x: slope %v intercept %v, want 0 and the mean", b, a)
	}
}

// TestClusteredSlopeCoversAndIsHonest: over many constructed studies the
// cluster interval covers the true slope about 95% of the time, and it is
// wider than an interval that treated every seed as its own cohort would
// be (which, with a cohort effect, covers far less often).
func TestClusteredSlopeCoversAndIsHonest(t *testing.T) {
	const studies, truth = 200, 0.3
	covered, naiveCovered := 0, 0
	for s := range uint64(studies) {
		x, y, cl := cohorts(12, 5, truth, 0.05, 0.02, s)
		got := ClusteredSlope(x, y, cl, s)
		if got.Clusters != 12 || got.Points != 60 || got.CI == nil {
			t.Fatalf("clusters %d points %d ci %v", got.Clusters, got.Points, got.CI)
		}
		if got.CI.Lo <= truth && truth <= got.CI.Hi {
			covered++
		}
		each := make([]string, len(x))
		for i := range each {
			each[i] = fmt.Sprint(i)
		}
		naive := ClusteredSlope(x, y, each, s)
		if naive.CI.Lo <= truth && truth <= naive.CI.Hi {
			naiveCovered++
		}
	}
	rate, naiveRate := float64(covered)/studies, float64(naiveCovered)/studies
	t.Logf("coverage: clusters %.2f, points as clusters %.2f", rate, naiveRate)
	if rate < 0.88 {
		t.Errorf("cluster interval covers the true slope in %.2f of studies, want about 0.95", rate)
	}
	if naiveRate > rate-0.1 {
		t.Errorf("resampling points covers %.2f, cohorts %.2f: the cohort effect should make the naive interval too narrow", naiveRate, rate)
	}
}

// TestClusteredSlopeNeedsClusters: two cohorts give a slope and no
// interval.
func TestClusteredSlopeNeedsClusters(t *testing.T) {
	got := ClusteredSlope([]float64{0, 0, 1, 1}, []float64{0, 0.1, 1, 1.1}, []string{"a", "a", "b", "b"}, 1)
	if got.CI != nil || math.Abs(got.Slope-1) > 1e-12 {
		t.Fatalf("%+v", got)
	}
}

// A predictor with one value everywhere has no slope and no interval; one
// that varies only between some clusters gets an interval from the
// resamples in which it varies, never from zero slopes of those in which
// it does not.
func TestClusteredSlopeOfAConstantOrRarelyVaryingX(t *testing.T) {
	c := []string{"a", "a", "b", "b", "c", "c"}
	if got := ClusteredSlope([]float64{1, 1, 1, 1, 1, 1}, []float64{0, 1, 2, 3, 4, 5}, c, 1); !got.Constant || got.CI != nil {
		t.Fatalf("constant x: %+v", got)
	}
	if got := ClusteredSlope(nil, nil, nil, 1); got.Constant || got.CI != nil || got.Points != 0 {
		t.Fatalf("no points: %+v", got)
	}
	// y = 2x exactly: every resample in which x varies has slope 2.
	x := []float64{0, 0, 0, 0, 1, 1}
	got := ClusteredSlope(x, []float64{0, 0, 0, 0, 2, 2}, c, 1)
	if got.Constant || got.CI == nil || got.CI.Lo != 2 || got.CI.Hi != 2 {
		t.Fatalf("slope 2 wherever x varies: %+v", got)
	}
}
