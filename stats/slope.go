package stats

import (
	"math/rand/v2"
	"slices"
)

// Slope is a least-squares line's slope with its 95% interval.
type Slope struct {
	Slope     float64   `json:"slope"`
	Intercept float64   `json:"intercept"`
	CI        *Interval `json:"ci,omitempty"` // of the slope; nil with fewer than three clusters, or a constant x
	// Constant: every point has the same x, so there is no slope to fit
	// (Slope is 0 and Intercept the mean of y).
	Constant bool `json:"constant_x,omitempty"`
	Points   int  `json:"points"`
	Clusters int  `json:"clusters"`
}

// Fit is the least-squares line through (x, y): slope and intercept (zero
// slope, the mean as intercept, for fewer than two distinct x).
func Fit(x, y []float64) (slope, intercept float64) {
	if len(x) == 0 {
		return 0, 0
	}
	mx, my := mean(x), mean(y)
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	if sxx == 0 {
		return 0, my
	}
	return sxy / sxx, my - sxy/sxx*mx
}

// ClusteredSlope is the slope of y on x with a 95% percentile-bootstrap
// interval that resamples whole clusters: the units whose x was set
// independently (a cohort, whose predictor is measured once, with its
// seeds inside). Resampling points would treat a cohort's seeds as
// independent cohorts and give an interval too narrow. With fewer than
// three clusters there is no interval.
func ClusteredSlope(x, y []float64, cluster []string, seed uint64) Slope {
	if len(x) != len(y) || len(x) != len(cluster) {
		panic("stats: slope points and clusters of different lengths")
	}
	s := Slope{Points: len(x), Constant: len(x) > 0 && slices.Min(x) == slices.Max(x)}
	s.Slope, s.Intercept = Fit(x, y)
	var names []string
	members := map[string][]int{}
	for i, c := range cluster {
		if _, ok := members[c]; !ok {
			names = append(names, c)
		}
		members[c] = append(members[c], i)
	}
	s.Clusters = len(names)
	if s.Clusters < 3 || s.Constant {
		return s
	}
	r := rand.New(rand.NewPCG(seed, 0x736c6f70))
	slopes := make([]float64, 0, Resamples)
	var bx, by []float64
	// A resample whose clusters all have one x has no slope: it is drawn
	// again, not counted as a slope of 0 (the draws are bounded, so a
	// predictor that varies in one cluster only still ends).
	for tries := 0; len(slopes) < Resamples && tries < 20*Resamples; tries++ {
		bx, by = bx[:0], by[:0]
		for range names {
			for _, i := range members[names[r.IntN(len(names))]] {
				bx, by = append(bx, x[i]), append(by, y[i])
			}
		}
		if slices.Min(bx) == slices.Max(bx) {
			continue
		}
		b, _ := Fit(bx, by)
		slopes = append(slopes, b)
	}
	if len(slopes) < Resamples/2 {
		return s // x varies in too few resamples for an interval
	}
	lo, hi := percentiles(slopes)
	s.CI = &Interval{Mean: s.Slope, Lo: lo, Hi: hi}
	return s
}
