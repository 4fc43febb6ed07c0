package cpu

import (
	"math"

	"github.com/corl-project/corl/gpu"
)

func checkAttn(s gpu.AttnShape) {
	if s.NKV <= 0 || s.NH%s.NKV != 0 || s.Tq > s.Tk || s.Tk > s.Tcap {
		panic("gpu: bad attention shape")
	}
}

// AttentionForward implements gpu.Backend.
// q (B, Tq, NH*HS), k, v (B, Tcap, NKV*HS) -> out (B, Tq, NH*HS), att (B, NH, Tq, Tk).
// Query tq sits at position Tk-Tq+tq and attends to keys 0..that position.
func (be *Backend) AttentionForward(out, att, q, k, v gpu.Buffer, s gpu.AttnShape) {
	checkAttn(s)
	o, a, qd, kd, vd := Data(out), Data(att), Data(q), Data(k), Data(v)
	C, CKV, group := s.NH*s.HS, s.NKV*s.HS, s.NH/s.NKV
	scale := float32(1 / math.Sqrt(float64(s.HS)))
	be.parallelFor(s.B*s.NH, 1, func(lo, hi int) {
		for bh := lo; bh < hi; bh++ {
			b, h := bh/s.NH, bh%s.NH
			kvo := (h / group) * s.HS
			for tq := 0; tq < s.Tq; tq++ {
				pos := s.Tk - s.Tq + tq
				qv := qd[(b*s.Tq+tq)*C+h*s.HS:][:s.HS]
				row := a[((b*s.NH+h)*s.Tq+tq)*s.Tk:][:s.Tk]
				maxv := float32(math.Inf(-1))
				for tk := 0; tk <= pos; tk++ {
					x := dot(qv, kd[(b*s.Tcap+tk)*CKV+kvo:][:s.HS]) * scale
					row[tk] = x
					maxv = max(maxv, x)
				}
				var sum float32
				for tk := 0; tk <= pos; tk++ {
					e := float32(math.Exp(float64(row[tk] - maxv)))
					row[tk] = e
					sum += e
				}
				inv := 1 / sum
				for tk := 0; tk <= pos; tk++ {
					row[tk] *= inv
				}
				clear(row[pos+1:])
				ov := o[(b*s.Tq+tq)*C+h*s.HS:][:s.HS]
				clear(ov)
				for tk := 0; tk <= pos; tk++ {
					axpy(ov, row[tk], vd[(b*s.Tcap+tk)*CKV+kvo:][:s.HS])
				}
			}
		}
	})
}

// AttentionBackward implements gpu.Backend. Work is split over (batch, kv head)
// so that the goroutine owning a kv head is the only writer of its dk and dv.
func (be *Backend) AttentionBackward(dq, dk, dv, dout, att, q, k, v gpu.Buffer, s gpu.AttnShape) {
	checkAttn(s)
	dqd, dkd, dvd, d, a, qd, kd, vd := Data(dq), Data(dk), Data(dv), Data(dout), Data(att), Data(q), Data(k), Data(v)
	C, CKV, group := s.NH*s.HS, s.NKV*s.HS, s.NH/s.NKV
	scale := float32(1 / math.Sqrt(float64(s.HS)))
	be.parallelFor(s.B*s.NKV, 1, func(lo, hi int) {
		datt := make([]float32, s.Tk)
		for bk := lo; bk < hi; bk++ {
			b, kvh := bk/s.NKV, bk%s.NKV
			kvo := kvh * s.HS
			for h := kvh * group; h < (kvh+1)*group; h++ {
				for tq := 0; tq < s.Tq; tq++ {
					pos := s.Tk - s.Tq + tq
					row := a[((b*s.NH+h)*s.Tq+tq)*s.Tk:][:s.Tk]
					dov := d[(b*s.Tq+tq)*C+h*s.HS:][:s.HS]
					var sum float32
					for tk := 0; tk <= pos; tk++ {
						off := (b*s.Tcap+tk)*CKV + kvo
						datt[tk] = dot(dov, vd[off:][:s.HS])
						axpy(dvd[off:][:s.HS], row[tk], dov)
						sum += row[tk] * datt[tk]
					}
					qv := qd[(b*s.Tq+tq)*C+h*s.HS:][:s.HS]
					dqv := dqd[(b*s.Tq+tq)*C+h*s.HS:][:s.HS]
					for tk := 0; tk <= pos; tk++ {
						off := (b*s.Tcap+tk)*CKV + kvo
						g := row[tk] * (datt[tk] - sum) * scale
						axpy(dqv, g, kd[off:][:s.HS])
						axpy(dkd[off:][:s.HS], g, qv)
					}
				}
			}
		}
	})
}

// dot returns sum a[i]*b[i] with four independent accumulators.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy computes y += alpha*x.
func axpy(y []float32, alpha float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += alpha * x[i]
	}
}
