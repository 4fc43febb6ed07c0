package stats

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Interval is a mean with its 95% interval.
type Interval struct {
	Mean float64 `json:"mean"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
}

// Resamples is the bootstrap's number of resamples.
const Resamples = 2000

// MeanCI is the mean of x with a 95% percentile-bootstrap interval over its
// elements (problems).
func MeanCI(x []float64, seed uint64) Interval {
	iv := Interval{Mean: mean(x)}
	if len(x) == 0 {
		return iv
	}
	r := rand.New(rand.NewPCG(seed, 0x626f6f74))
	means := make([]float64, Resamples)
	for b := range means {
		var s float64
		for range x {
			s += x[r.IntN(len(x))]
		}
		means[b] = s / float64(len(x))
	}
	iv.Lo, iv.Hi = percentiles(means)
	return iv
}

// PairedDiff is mean(b) - mean(a) over the same problems, with its 95%
// paired-bootstrap interval (problems resampled together) and a two-sided
// p: twice the share of resampled differences on the far side of zero.
func PairedDiff(a, b []float64, seed uint64) (Interval, float64) {
	if len(a) != len(b) {
		panic("stats: paired samples of different lengths")
	}
	d := make([]float64, len(a))
	for i := range a {
		d[i] = b[i] - a[i]
	}
	iv := MeanCI(d, seed)
	if len(d) == 0 || iv.Lo == iv.Hi {
		return iv, 1
	}
	r := rand.New(rand.NewPCG(seed, 0x626f6f74))
	below := 0
	for range Resamples {
		var s float64
		for range d {
			s += d[r.IntN(len(d))]
		}
		if (iv.Mean >= 0 && s <= 0) || (iv.Mean < 0 && s >= 0) {
			below++
		}
	}
	return iv, math.Min(1, 2*float64(below)/Resamples)
}

// McNemar counts the problems only a solves and only b solves, and gives
// the exact two-sided p that the two are equally good (binomial, p = 1/2,
// over the discordant pairs).
func McNemar(a, b []bool) (onlyA, onlyB int, p float64) {
	for i := range a {
		switch {
		case a[i] && !b[i]:
			onlyA++
		case b[i] && !a[i]:
			onlyB++
		}
	}
	n, k := onlyA+onlyB, min(onlyA, onlyB)
	if n == 0 {
		return onlyA, onlyB, 1
	}
	var tail float64
	for i := 0; i <= k; i++ {
		lg, _ := math.Lgamma(float64(n + 1))
		li, _ := math.Lgamma(float64(i + 1))
		lr, _ := math.Lgamma(float64(n - i + 1))
		tail += math.Exp(lg - li - lr - float64(n)*math.Ln2)
	}
	return onlyA, onlyB, math.Min(1, 2*tail)
}

func mean(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// percentiles are the 2.5th and 97.5th percentiles of x (sorted in place).
func percentiles(x []float64) (float64, float64) {
	sort.Float64s(x)
	at := func(q float64) float64 { return x[min(len(x)-1, int(q*float64(len(x))))] }
	return at(0.025), at(0.975)
}
