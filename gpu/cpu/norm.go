package cpu

import (
	"math"

	"github.com/corl-project/corl/gpu"
)

// RMSNormForward implements gpu.Backend.
// inp (N, C), w (C) -> out (N, C); rstd (N) saved for backward.
func (be *Backend) RMSNormForward(out, rstd, inp, w gpu.Buffer, N, C int, eps float32) {
	o, rs, x, wd := Data(out), Data(rstd), Data(inp), Data(w)
	be.parallelFor(N, 8, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := x[i*C : (i+1)*C]
			var ss float64
			for _, v := range row {
				ss += float64(v) * float64(v)
			}
			r := float32(1 / math.Sqrt(ss/float64(C)+float64(eps)))
			rs[i] = r
			dst := o[i*C : (i+1)*C]
			for c, v := range row {
				dst[c] = v * r * wd[c]
			}
		}
	})
}

// RMSNormBackward implements gpu.Backend. With xhat = x*rstd:
// dinp += rstd * (w*dout - xhat * mean(w*dout*xhat)); dw += sum_rows dout*xhat.
func (be *Backend) RMSNormBackward(dinp, dw, dout, inp, w, rstd gpu.Buffer, N, C int) {
	dx, dwd, d, x, wd, rs := Data(dinp), Data(dw), Data(dout), Data(inp), Data(w), Data(rstd)
	be.parallelFor(N, 8, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			r := rs[i]
			xr, dr := x[i*C:(i+1)*C], d[i*C:(i+1)*C]
			var dot float64
			for c := range xr {
				dot += float64(dr[c] * wd[c] * xr[c] * r)
			}
			m := float32(dot / float64(C))
			dst := dx[i*C : (i+1)*C]
			for c := range xr {
				dst[c] += r * (dr[c]*wd[c] - xr[c]*r*m)
			}
		}
	})
	be.parallelFor(C, 64, func(lo, hi int) {
		for i := 0; i < N; i++ {
			r := rs[i]
			xr, dr := x[i*C+lo:i*C+hi], d[i*C+lo:i*C+hi]
			acc := dwd[lo:hi]
			for c := range acc {
				acc[c] += dr[c] * xr[c] * r
			}
		}
	})
}

// LayerNormForward implements gpu.Backend.
// inp (N, C), w, b (C) -> out (N, C); mean, rstd (N) saved for backward.
func (be *Backend) LayerNormForward(out, mean, rstd, inp, w, b gpu.Buffer, N, C int, eps float32) {
	o, mu, rs, x, wd, bd := Data(out), Data(mean), Data(rstd), Data(inp), Data(w), Data(b)
	be.parallelFor(N, 8, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := x[i*C : (i+1)*C]
			var s float64
			for _, v := range row {
				s += float64(v)
			}
			m := s / float64(C)
			var vs float64
			for _, v := range row {
				dv := float64(v) - m
				vs += dv * dv
			}
			r := 1 / math.Sqrt(vs/float64(C)+float64(eps))
			mf, rf := float32(m), float32(r)
			mu[i], rs[i] = mf, rf
			dst := o[i*C : (i+1)*C]
			for c, v := range row {
				dst[c] = (v-mf)*rf*wd[c] + bd[c]
			}
		}
	})
}

// LayerNormBackward implements gpu.Backend. With norm = (x-mean)*rstd and
// dnorm = w*dout: dinp += rstd*(dnorm - mean(dnorm) - norm*mean(dnorm*norm));
// dw += sum_rows dout*norm; db += sum_rows dout.
func (be *Backend) LayerNormBackward(dinp, dw, db, dout, inp, w, mean, rstd gpu.Buffer, N, C int) {
	dx, dwd, dbd, d, x, wd, mu, rs := Data(dinp), Data(dw), Data(db), Data(dout), Data(inp), Data(w), Data(mean), Data(rstd)
	be.parallelFor(N, 8, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			m, r := mu[i], rs[i]
			xr, dr := x[i*C:(i+1)*C], d[i*C:(i+1)*C]
			var sd, sdn float64
			for c := range xr {
				dn := wd[c] * dr[c]
				sd += float64(dn)
				sdn += float64(dn * (xr[c] - m) * r)
			}
			md, mdn := float32(sd/float64(C)), float32(sdn/float64(C))
			dst := dx[i*C : (i+1)*C]
			for c := range xr {
				n := (xr[c] - m) * r
				dst[c] += r * (wd[c]*dr[c] - md - n*mdn)
			}
		}
	})
	be.parallelFor(C, 64, func(lo, hi int) {
		for i := 0; i < N; i++ {
			m, r := mu[i], rs[i]
			xr, dr := x[i*C+lo:i*C+hi], d[i*C+lo:i*C+hi]
			aw, ab := dwd[lo:hi], dbd[lo:hi]
			for c := range aw {
				aw[c] += dr[c] * (xr[c] - m) * r
				ab[c] += dr[c]
			}
		}
	})
}
