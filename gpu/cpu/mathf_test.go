package cpu

import (
	"math"
	"testing"
)

func TestExp32Accuracy(t *testing.T) {
	for x := float32(-87); x < 88; x += 0.0137 {
		got, want := float64(exp32(x)), math.Exp(float64(x))
		if math.Abs(got-want) > 3e-7*want {
			t.Fatalf("exp32(%v) = %v, want %v (rel err %.3g)", x, got, want, math.Abs(got-want)/want)
		}
	}
	if exp32(100) < 1e38 || exp32(-100) > 1e-37 || exp32(0) != 1 || exp32(float32(math.NaN())) == exp32(float32(math.NaN())) {
		t.Fatal("exp32 edge values wrong")
	}
}

func TestTanh32Accuracy(t *testing.T) {
	for x := float32(-12); x < 12; x += 0.0011 {
		got, want := float64(tanh32(x)), math.Tanh(float64(x))
		if math.Abs(got-want) > 2e-7 {
			t.Fatalf("tanh32(%v) = %v, want %v", x, got, want)
		}
	}
}
