package cpu

import (
	"math"

	"github.com/corl-project/corl/gpu"
)

// sumChunk is the fixed chunk of SumSquares: partial sums per chunk are added
// in chunk order, so the total does not depend on the thread count.
const sumChunk = 1 << 14

// SumSquares implements gpu.Backend.
func (be *Backend) SumSquares(x gpu.Buffer, n int) float64 {
	d := Data(x)[:n]
	chunks := (n + sumChunk - 1) / sumChunk
	partial := make([]float64, chunks)
	be.parallelFor(chunks, 1, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			var s float64
			for _, v := range d[c*sumChunk : min(n, (c+1)*sumChunk)] {
				s += float64(v) * float64(v)
			}
			partial[c] = s
		}
	})
	var total float64
	for _, s := range partial {
		total += s
	}
	return total
}

// AdamW implements gpu.Backend.
func (be *Backend) AdamW(p, g, m, v gpu.Buffer, n int, h gpu.AdamWParams) {
	pd, gd, md, vd := Data(p), Data(g), Data(m), Data(v)
	bc1 := float32(1 - math.Pow(float64(h.Beta1), float64(h.Step)))
	bc2 := float32(1 - math.Pow(float64(h.Beta2), float64(h.Step)))
	be.parallelFor(n, 8192, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gr := gd[i] * h.GradScale
			mi := h.Beta1*md[i] + (1-h.Beta1)*gr
			vi := h.Beta2*vd[i] + (1-h.Beta2)*gr*gr
			md[i], vd[i] = mi, vi
			mhat, vhat := mi/bc1, vi/bc2
			pd[i] -= h.LR * (mhat/(float32(math.Sqrt(float64(vhat)))+h.Eps) + h.WeightDecay*pd[i])
		}
	})
}
