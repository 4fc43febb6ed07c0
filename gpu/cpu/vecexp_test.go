package cpu

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// The exp-based vector kernels (GELU, SwiGLU, the softmax row, the
// log-sum-exp row and its scaled exponentials) do not round as the Go loops
// do: their exp fuses multiply-adds and their sums run in 16 lanes. Below
// is a scalar model of exactly what they compute, step by step; the AVX-512
// and the AVX2 kernels must both give its bits, so a machine without
// AVX-512 computes what one with it does. Every product is converted
// explicitly, so no compiler fuses what the kernels round.

// fma32 is a float32 fused multiply-add, a*b+c rounded once: the float64
// product is exact, the float64 sum is made round-to-odd from its exact
// error (TwoSum), and a round-to-odd value with 29 spare bits rounds to
// float32 as the exact value would.
func fma32(a, b, c float32) float32 {
	p, cc := float64(a)*float64(b), float64(c)
	s := p + cc
	bb := s - p
	e := (p - (s - bb)) + (cc - bb)
	if bits := math.Float64bits(s); e != 0 && bits&1 == 0 {
		if (e > 0) == (s > 0) {
			s = math.Float64frombits(bits + 1)
		} else {
			s = math.Float64frombits(bits - 1)
		}
	}
	return float32(s)
}

func f32(bits uint32) float32 { return math.Float32frombits(bits) }

// expModel is EXP (activation_amd64.s) and EXP2 for one lane.
func expModel(x float32) float32 {
	x = max(min(x, f32(0x42b16666)), f32(0xc2ae999a))
	n := float32(math.RoundToEven(float64(float32(x * f32(0x3fb8aa3b)))))
	r := fma32(-n, f32(0x3f318000), x)
	r = fma32(n, f32(0x395e8083), r)
	y := f32(0x39506967)
	for _, c := range []uint32{0x3ab743ce, 0x3c088908, 0x3d2aa9c1, 0x3e2aaaaa, 0x3f000000} {
		y = fma32(r, y, f32(c))
	}
	y = fma32(float32(r*r), y, r)
	y = y + 1
	return float32(y * math.Float32frombits(uint32(int32(n)+127)<<23))
}

// tanhqModel is TANHQ: q = 2/(exp(2u)+1), u = sqrt(2/pi)*(v + 0.044715 v^3).
func tanhqModel(v float32) float32 {
	t := fma32(f32(0x3d372713), float32(v*v), 1)
	t = float32(v * t)
	e := expModel(float32(t * f32(0x3fcc422a)))
	return 2 / (e + 1)
}

func sigmoidModel(g float32) float32 { return 1 / (expModel(0-g) + 1) }

func geluFwdModel(v float32) float32 {
	return float32(float32((2-tanhqModel(v))*v) * 0.5)
}

func geluBwdModel(dinp, dout, v float32) float32 {
	q := tanhqModel(v)
	onePlus := 2 - q
	sech2 := float32(q * onePlus)
	d := fma32(f32(0x3e095d4f), float32(v*v), 1)
	d = float32(d * f32(0x3f4c422a))
	d = float32(d * sech2)
	d = fma32(v, d, onePlus)
	d = float32(d * 0.5)
	return fma32(d, dout, dinp)
}

func swigluFwdModel(g, u float32) float32 {
	s := sigmoidModel(g)
	return float32(float32(s*g) * u)
}

func swigluBwdModel(dgate, dup, dout, g, u float32) (float32, float32) {
	s := sigmoidModel(g)
	dup = fma32(dout, float32(s*g), dup)
	t := fma32(g, 1-s, 1)
	t = float32(float32(t*s) * u)
	return fma32(dout, t, dgate), dup
}

// sum16Model is SUM16 over lanes: halves, then SUM8's pairs.
func sum16Model(l *[16]float32) float32 {
	var a [8]float32
	for i := range a {
		a[i] = l[i] + l[i+8]
	}
	b0, b1, b2, b3 := a[0]+a[4], a[1]+a[5], a[2]+a[6], a[3]+a[7]
	return (b0 + b1) + (b2 + b3)
}

func softmaxRowModel(row []float32, scale float32) {
	maxv := float32(math.Inf(-1))
	for j := range row {
		row[j] = float32(row[j] * scale)
		maxv = max(maxv, row[j])
	}
	var lanes [16]float32
	for j := range row {
		row[j] = expModel(row[j] - maxv)
		lanes[j%16] += row[j]
	}
	inv := 1 / sum16Model(&lanes)
	for j := range row {
		row[j] = float32(row[j] * inv)
	}
}

// lseRowModel is lseRowAVX512: the maximum and the exponentials' float64
// sum in 16 lanes, reduced as halves, quarters, pairs.
func lseRowModel(row []float32) (float32, float64) {
	maxv := float32(math.Inf(-1))
	for _, v := range row {
		maxv = max(maxv, v)
	}
	var l [16]float64
	for j, v := range row {
		l[j%16] += float64(expModel(v - maxv))
	}
	var s [8]float64
	for i := range s {
		s[i] = l[i] + l[i+8]
	}
	t0, t1, t2, t3 := s[0]+s[4], s[1]+s[5], s[2]+s[6], s[3]+s[7]
	return maxv, (t0 + t2) + (t1 + t3)
}

// TestFMA32RoundsOnce: fma32 is the exactly rounded a*b+c, where rounding
// the float64 sum to float32 is not: 80581 * 13325 = 2^30 + 1, so with
// these scales a*b = 2^-24 + 2^-54 and 1 + a*b lies just above a float32
// midpoint that its float64 rounding lands on.
func TestFMA32RoundsOnce(t *testing.T) {
	a, b := float32(80581)*0x1p-27, float32(13325)*0x1p-27
	if naive := float32(float64(a)*float64(b) + 1); naive != 1 {
		t.Fatalf("the case does not round twice: %v", naive)
	}
	if got, want := fma32(a, b, 1), float32(1+0x1p-23); got != want {
		t.Errorf("fma32 = %v, want %v", got, want)
	}
	r := rand.New(rand.NewPCG(1, 9))
	for range 20000 {
		a, b, c := r.Float32()*4-2, r.Float32()*4-2, (r.Float32()*4-2)*float32(math.Ldexp(1, r.IntN(40)-20))
		x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetFloat64(float64(c)))
		exact, _ := x.Float32()
		if got := fma32(a, b, c); got != exact {
			t.Fatalf("fma32(%v, %v, %v) = %v, exactly rounded %v", a, b, c, got, exact)
		}
	}
}

// TestVectorExpKernelsMatchTheirModel: each exp-based kernel, on every
// vector path this CPU has, gives the model's bits for every element, at
// every tail length, on inputs from near zero to past exp's clamps, and the
// row kernels write nothing past the row.
func TestVectorExpKernelsMatchTheirModel(t *testing.T) {
	defer SetKernel("")
	for _, kern := range vectorKernels(t) {
		SetKernel(kern)
		r := rand.New(rand.NewPCG(17, 18))
		bitsEq := func(what string, n, i int, got, want float32) {
			t.Helper()
			if math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("%s %s n %d element %d: kernel %v (%#x), model %v (%#x)", kern, what, n, i, got, math.Float32bits(got), want, math.Float32bits(want))
			}
		}
		for _, spread := range []float32{1, 12, 150} {
			const n = 1024
			x, y, z, w := randSlice(r, n), randSlice(r, n), randSlice(r, n), randSlice(r, n)
			for i := range x {
				x[i] *= spread
			}
			out := make([]float32, n)
			if geluFwdVec(out, x) != n {
				t.Fatalf("%s: geluFwdVec did not take all %d", kern, n)
			}
			for i := range out {
				bitsEq("gelu forward", n, i, out[i], geluFwdModel(x[i]))
			}
			dx := append([]float32(nil), z...)
			geluBwdVec(dx, y, x)
			for i := range dx {
				bitsEq("gelu backward", n, i, dx[i], geluBwdModel(z[i], y[i], x[i]))
			}
			swigluFwdVec(out, x, y)
			for i := range out {
				bitsEq("swiglu forward", n, i, out[i], swigluFwdModel(x[i], y[i]))
			}
			dg, du := append([]float32(nil), z...), append([]float32(nil), w...)
			swigluBwdVec(dg, du, out, x, y)
			for i := range dg {
				wg, wu := swigluBwdModel(z[i], w[i], out[i], x[i], y[i])
				bitsEq("swiglu backward dgate", n, i, dg[i], wg)
				bitsEq("swiglu backward dup", n, i, du[i], wu)
			}
		}
		const guard = float32(12345)
		lengths := []int{257, 1000}
		for n := 1; n <= 40; n++ {
			lengths = append(lengths, n)
		}
		for _, n := range lengths {
			for _, spread := range []float32{1, 40, 300} {
				src := randSlice(r, n)
				for i := range src {
					src[i] = src[i]*spread + 2
				}
				got := append(append([]float32{}, src...), guard, guard)
				softmaxRowVec(got[:n], 0.3)
				want := append([]float32{}, src...)
				softmaxRowModel(want, 0.3)
				for i := range want {
					bitsEq("softmax", n, i, got[i], want[i])
				}
				maxv, lse, _ := rowLSEVec(src)
				wantMax, wantSum := lseRowModel(src)
				if maxv != wantMax || lse != float64(wantMax)+math.Log(wantSum) {
					t.Fatalf("%s log-sum-exp n %d: kernel %v %v, model %v %v", kern, n, maxv, lse, wantMax, float64(wantMax)+math.Log(wantSum))
				}
				logsum := float32(lse - float64(maxv))
				dst := append(make([]float32, n), guard, guard)
				expScaleVec(dst[:n], src, maxv, logsum, -0.7)
				for i, v := range src {
					bitsEq("scaled exp", n, i, dst[i], float32(expModel((v-maxv)-logsum)*-0.7))
				}
				if got[n] != guard || got[n+1] != guard || dst[n] != guard || dst[n+1] != guard {
					t.Fatalf("%s n %d: a row kernel wrote past the row", kern, n)
				}
			}
		}
	}
}
