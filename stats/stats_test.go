package stats

import (
	"math"
	"testing"
)

func TestMeanCI(t *testing.T) {
	if iv := MeanCI([]float64{0.5, 0.5, 0.5}, 1); iv != (Interval{0.5, 0.5, 0.5}) {
		t.Errorf("constant scores: %+v", iv)
	}
	// 400 coin flips, half right: the interval's half-width is about
	// 1.96 * sqrt(0.25/400) = 0.049.
	x := make([]float64, 400)
	for i := range x {
		x[i] = float64(i % 2)
	}
	iv := MeanCI(x, 1)
	if iv.Mean != 0.5 || math.Abs((iv.Hi-iv.Lo)/2-0.049) > 0.008 || iv.Lo >= 0.5 || iv.Hi <= 0.5 {
		t.Errorf("400 flips: %+v, want half-width about 0.049 around 0.5", iv)
	}
	if MeanCI(x, 1) != iv {
		t.Error("one seed, two intervals")
	}
}

func TestPairedDiff(t *testing.T) {
	a := make([]float64, 200)
	b := make([]float64, 200)
	for i := range a {
		a[i] = float64(i % 2)
		b[i] = a[i]
	}
	if iv, p := PairedDiff(a, b, 1); iv != (Interval{}) || p != 1 {
		t.Errorf("identical methods: %+v p %v", iv, p)
	}
	// b solves 40 more of 200 problems: a clear difference of 0.2.
	for i := 0; i < 80; i += 2 {
		b[i] = 1
	}
	iv, p := PairedDiff(a, b, 1)
	if math.Abs(iv.Mean-0.2) > 1e-12 || iv.Lo <= 0 || p > 0.01 {
		t.Errorf("b better by 0.2: %+v p %v", iv, p)
	}
}

func TestMcNemar(t *testing.T) {
	a := []bool{true, true, true, true, true, true, true, true, true, true, false, true}
	b := []bool{false, false, false, false, false, false, false, false, false, false, false, true}
	onlyA, onlyB, p := McNemar(a, b)
	// 10 discordant pairs, all one way: p = 2 * 0.5^10.
	if onlyA != 10 || onlyB != 0 || math.Abs(p-2*math.Pow(0.5, 10)) > 1e-12 {
		t.Errorf("McNemar: %d %d p %v", onlyA, onlyB, p)
	}
	if _, _, p := McNemar([]bool{true, false}, []bool{false, true}); p != 1 {
		t.Errorf("one discordant pair each way: p %v, want 1", p)
	}
}
