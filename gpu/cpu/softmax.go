package cpu

import (
	"math"

	"github.com/corl-project/corl/gpu"
)

// rowLSE returns the row's maximum and log-sum-exp (float64 accumulation):
// at temperature 1 the AVX-512 kernel where there is one.
func rowLSE(row []float32, invTemp float32) (maxv float32, lse float64) {
	if invTemp == 1 {
		if maxv, lse, ok := rowLSEVec(row); ok {
			return maxv, lse
		}
	}
	maxv = float32(math.Inf(-1))
	for _, v := range row {
		maxv = max(maxv, v*invTemp)
	}
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v*invTemp - maxv))
	}
	return maxv, float64(maxv) + math.Log(s)
}

// Softmax implements gpu.Backend. inp (N, V) -> out (N, V).
func (be *Backend) Softmax(out, inp gpu.Buffer, N, V int, temperature float32) {
	o, x := Data(out), Data(inp)
	inv := 1 / temperature
	be.parallelFor(N, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := x[i*V : (i+1)*V]
			_, lse := rowLSE(row, inv)
			dst := o[i*V : (i+1)*V]
			for j, v := range row {
				dst[j] = float32(math.Exp(float64(v*inv) - lse))
			}
		}
	})
}

// LogSoftmax implements gpu.Backend. inp (N, V) -> out (N, V).
func (be *Backend) LogSoftmax(out, inp gpu.Buffer, N, V int) {
	o, x := Data(out), Data(inp)
	be.parallelFor(N, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := x[i*V : (i+1)*V]
			_, lse := rowLSE(row, 1)
			dst := o[i*V : (i+1)*V]
			for j, v := range row {
				dst[j] = float32(float64(v) - lse)
			}
		}
	})
}

// TokenLogProbs implements gpu.Backend. logits (N, V), targets (N) -> logp (N);
// stats (N, 2) or nil receives [entropy H(p), KL(U||p)] per row, where
// H = lse - sum p*x and KL(U||p) = lse - mean(x) - log V.
func (be *Backend) TokenLogProbs(logp, stats, logits gpu.Buffer, targets []int32, N, V int) {
	lp, st, x := Data(logp), Data(stats), Data(logits)
	be.parallelFor(N, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := x[i*V : (i+1)*V]
			t := int(targets[i])
			if t < 0 || t >= V {
				panic("gpu: target id out of vocabulary range")
			}
			maxv, lse := rowLSE(row, 1)
			lp[i] = float32(float64(row[t]) - lse)
			if st != nil {
				var px, sx float64
				for _, v := range row {
					px += math.Exp(float64(v-maxv)) * float64(v)
					sx += float64(v)
				}
				px /= math.Exp(lse - float64(maxv))
				st[2*i] = float32(lse - px)
				st[2*i+1] = float32(lse - sx/float64(V) - math.Log(float64(V)))
			}
		}
	})
}

// TokenLogProbsBackward implements gpu.Backend.
// dlogits (N, V) = dlogp[i] * (onehot(targets[i]) - softmax(logits[i])).
func (be *Backend) TokenLogProbsBackward(dlogits, logits gpu.Buffer, targets []int32, dlogp []float32, N, V int) {
	dl, x := Data(dlogits), Data(logits)
	be.parallelFor(N, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dst := dl[i*V : (i+1)*V]
			w := dlogp[i]
			if w == 0 {
				clear(dst)
				continue
			}
			row := x[i*V : (i+1)*V]
			maxv, lse := rowLSE(row, 1)
			if !expScaleVec(dst, row, maxv, float32(lse-float64(maxv)), -w) {
				for j, v := range row {
					dst[j] = -w * float32(math.Exp(float64(v)-lse))
				}
			}
			dst[targets[i]] += w
		}
	})
}

// SoftmaxBackward implements gpu.Backend.
func (be *Backend) SoftmaxBackward(dinp, dout, out gpu.Buffer, N, V int, temperature float32) {
	dx, d, y := Data(dinp), Data(dout), Data(out)
	inv := 1 / temperature
	be.parallelFor(N, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dr, yr := d[i*V:(i+1)*V], y[i*V:(i+1)*V]
			var s float64
			for j := range dr {
				s += float64(dr[j] * yr[j])
			}
			sf := float32(s)
			dst := dx[i*V : (i+1)*V]
			for j := range dst {
				dst[j] += yr[j] * (dr[j] - sf) * inv
			}
		}
	})
}

// LogSoftmaxBackward implements gpu.Backend.
func (be *Backend) LogSoftmaxBackward(dinp, dout, out gpu.Buffer, N, V int) {
	dx, d, y := Data(dinp), Data(dout), Data(out)
	be.parallelFor(N, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dr, yr := d[i*V:(i+1)*V], y[i*V:(i+1)*V]
			var s float64
			for _, v := range dr {
				s += float64(v)
			}
			sf := float32(s)
			dst := dx[i*V : (i+1)*V]
			for j := range dst {
				dst[j] += dr[j] - float32(math.Exp(float64(yr[j])))*sf
			}
		}
	})
}
