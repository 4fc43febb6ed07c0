package cpu

import (
	"math"

	"github.com/corl-project/corl/gpu"
)

// ropeTable returns cos and sin (T, HS/2) for positions pos0..pos0+T-1 with
// inverse frequency theta^(-2i/HS), computed in float64.
func ropeTable(T, HS, pos0 int, theta float32) (cos, sin []float32) {
	half := HS / 2
	cos, sin = make([]float32, T*half), make([]float32, T*half)
	for t := 0; t < T; t++ {
		for i := 0; i < half; i++ {
			inv := math.Pow(float64(theta), -2*float64(i)/float64(HS))
			s, c := math.Sincos(float64(pos0+t) * inv)
			cos[t*half+i], sin[t*half+i] = float32(c), float32(s)
		}
	}
	return cos, sin
}

// RoPEForward implements gpu.Backend. x (B, T, H, HS) rotated in place.
func (be *Backend) RoPEForward(x gpu.Buffer, B, T, H, HS, pos0 int, theta float32) {
	be.rope(Data(x), B, T, H, HS, pos0, theta, 1)
}

// RoPEBackward implements gpu.Backend: the transpose of a rotation is the
// rotation by the opposite angle.
func (be *Backend) RoPEBackward(dx gpu.Buffer, B, T, H, HS, pos0 int, theta float32) {
	be.rope(Data(dx), B, T, H, HS, pos0, theta, -1)
}

func (be *Backend) rope(x []float32, B, T, H, HS, pos0 int, theta, sign float32) {
	if HS%2 != 0 {
		panic("gpu: rope needs an even head size")
	}
	half := HS / 2
	cos, sin := ropeTable(T, HS, pos0, theta)
	be.parallelFor(B*T, 8, func(lo, hi int) {
		for bt := lo; bt < hi; bt++ {
			t := bt % T
			cs, sn := cos[t*half:(t+1)*half], sin[t*half:(t+1)*half]
			for h := 0; h < H; h++ {
				v := x[(bt*H+h)*HS : (bt*H+h+1)*HS]
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
