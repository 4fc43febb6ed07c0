package cpu

import (
	"math"

	"github.com/corl-project/corl/gpu"
)

// ropeTable returns cos and sin (maxPos, HS/2) with inverse frequency
// theta^(-2i/HS), computed in float64 and cached per (theta, HS), grown to
// cover the largest position asked for.
func (be *Backend) ropeTable(maxPos, HS int, theta float32, invFreq []float32) (cos, sin []float32) {
	half := HS / 2
	key := ropeKey{theta: theta, hs: HS}
	if invFreq != nil {
		key = ropeKey{hs: HS, freq: &invFreq[0]}
	}
	t := be.rope[key]
	if len(t.cos) < maxPos*half {
		n := max(maxPos, 2*len(t.cos)/max(half, 1))
		t.cos, t.sin = make([]float32, n*half), make([]float32, n*half)
		for p := 0; p < n; p++ {
			for i := 0; i < half; i++ {
				inv := math.Pow(float64(theta), -2*float64(i)/float64(HS))
				if invFreq != nil {
					inv = float64(invFreq[i])
				}
				s, c := math.Sincos(float64(p) * inv)
				t.cos[p*half+i], t.sin[p*half+i] = float32(c), float32(s)
			}
		}
		be.rope[key] = t
	}
	return t.cos, t.sin
}

// ropeKey names a table: by theta, or by the frequency slice a scaled
// model owns (fixed for its life).
type ropeKey struct {
	theta float32
	hs    int
	freq  *float32
}

type ropeTab struct{ cos, sin []float32 }

// RoPEForward implements gpu.Backend. x (N, H, HS) rotated in place.
func (be *Backend) RoPEForward(x gpu.Buffer, pos []int32, N, H, HS int, theta float32) {
	be.applyRoPE(Data(x), pos, N, H, HS, theta, nil, 1)
}

// RoPEForwardFreq implements gpu.ScaledRoPE.
func (be *Backend) RoPEForwardFreq(x gpu.Buffer, pos []int32, N, H, HS int, invFreq []float32) {
	be.applyRoPE(Data(x), pos, N, H, HS, 0, invFreq, 1)
}

// RoPEBackwardFreq implements gpu.ScaledRoPE.
func (be *Backend) RoPEBackwardFreq(dx gpu.Buffer, pos []int32, N, H, HS int, invFreq []float32) {
	be.applyRoPE(Data(dx), pos, N, H, HS, 0, invFreq, -1)
}

var _ gpu.ScaledRoPE = (*Backend)(nil)

// RoPEBackward implements gpu.Backend: the transpose of a rotation is the
// rotation by the opposite angle.
func (be *Backend) RoPEBackward(dx gpu.Buffer, pos []int32, N, H, HS int, theta float32) {
	be.applyRoPE(Data(dx), pos, N, H, HS, theta, nil, -1)
}

func (be *Backend) applyRoPE(x []float32, pos []int32, N, H, HS int, theta float32, invFreq []float32, sign float32) {
	if HS%2 != 0 {
		panic("gpu: rope needs an even head size")
	}
	half := HS / 2
	maxPos := 0
	for _, p := range pos[:N] {
		maxPos = max(maxPos, int(p)+1)
	}
	if invFreq != nil && len(invFreq) != half {
		panic("gpu: rope frequencies for another head size")
	}
	cos, sin := be.ropeTable(maxPos, HS, theta, invFreq)
	be.parallelFor(N, 8, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			p := int(pos[n])
			cs, sn := cos[p*half:(p+1)*half], sin[p*half:(p+1)*half]
			for h := 0; h < H; h++ {
				v := x[(n*H+h)*HS : (n*H+h+1)*HS]
				x1, x2 := v[:half], v[half:]
				for i := range x1 {
					c, s := cs[i], sign*sn[i]
					a, b := x1[i], x2[i]
					x1[i] = a*c - b*s
					x2[i] = a*s + b*c
				}
			}
		}
	})
}
