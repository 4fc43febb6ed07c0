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
			r := float32(1 / math.Sqrt(sumSquares(row)/float64(C)+float64(eps)))
			rs[i] = r
			dst := o[i*C : (i+1)*C]
			for c := scaleRowVec(dst, row, wd[:C], r); c < C; c++ {
				dst[c] = row[c] * r * wd[c]
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
			m := sumLanes(row) / float64(C)
			r := 1 / math.Sqrt(sqDevLanes(row, m)/float64(C)+float64(eps))
			mf, rf := float32(m), float32(r)
			mu[i], rs[i] = mf, rf
			dst := o[i*C : (i+1)*C]
			for c := layerNormRowVec(dst, row, wd[:C], bd[:C], mf, rf); c < C; c++ {
				dst[c] = (row[c]-mf)*rf*wd[c] + bd[c]
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

// The norms' row sums run in eight float64 lanes, lane j summing the terms
// of x[j], x[j+8], ... in order, then added (l0+l4)+(l2+l6) and
// (l1+l5)+(l3+l7), and those two (reduce8). A vector kernel fills the lanes
// on AVX-512 and a Go loop otherwise (the rest of the row always), so a
// norm has the same bits on every machine, and eight chains instead of one.

// reduce8 adds the eight lanes in their fixed order.
func reduce8(l *[8]float64) float64 {
	return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}

// sumSquares returns the sum of x's squares in float64 (each square exact).
func sumSquares(x []float32) float64 {
	var l [8]float64
	for i := sumSquaresVec(x, &l); i < len(x); i++ {
		l[i%8] += float64(x[i]) * float64(x[i])
	}
	return reduce8(&l)
}

// sumLanes returns the sum of x in float64.
func sumLanes(x []float32) float64 {
	var l [8]float64
	for i := sumLanesVec(x, &l); i < len(x); i++ {
		l[i%8] += float64(x[i])
	}
	return reduce8(&l)
}

// sqDevLanes returns the sum of (x-m)^2 in float64, each square rounded
// before it is added (the explicit conversion keeps a compiler from fusing
// the multiply and the add, as some targets would).
func sqDevLanes(x []float32, m float64) float64 {
	var l [8]float64
	for i := sqDevLanesVec(x, m, &l); i < len(x); i++ {
		d := float64(x[i]) - m
		l[i%8] += float64(d * d)
	}
	return reduce8(&l)
}
