package cpu

import "github.com/corl-project/corl/gpu"

const geluScale = 0.7978845608028654 // sqrt(2/pi)

// GELUForward implements gpu.Backend (tanh approximation, as GPT-2).
func (be *Backend) GELUForward(out, inp gpu.Buffer, n int) {
	o, x := Data(out), Data(inp)
	// Ranges start on multiples of 16, so which elements take the vector path
	// depends on n alone, never on the thread count.
	be.parallelFor((n+15)/16, 256, func(lo, hi int) {
		lo, hi = lo*16, min(hi*16, n)
		for i := lo + geluFwdVec(o[lo:hi], x[lo:hi]); i < hi; i++ {
			v := x[i]
			u := geluScale * (v + 0.044715*v*v*v)
			o[i] = 0.5 * v * (1 + tanh32(u))
		}
	})
}

// GELUBackward implements gpu.Backend: dinp += gelu'(inp) * dout.
func (be *Backend) GELUBackward(dinp, dout, inp gpu.Buffer, n int) {
	dx, d, x := Data(dinp), Data(dout), Data(inp)
	be.parallelFor((n+15)/16, 256, func(lo, hi int) {
		lo, hi = lo*16, min(hi*16, n)
		for i := lo + geluBwdVec(dx[lo:hi], d[lo:hi], x[lo:hi]); i < hi; i++ {
			v := x[i]
			u := geluScale * (v + 0.044715*v*v*v)
			th := tanh32(u)
			sech2 := 1 - th*th
			g := 0.5*(1+th) + 0.5*v*sech2*geluScale*(1+3*0.044715*v*v)
			dx[i] += g * d[i]
		}
	})
}

// SwiGLUForward implements gpu.Backend.
// gateup (N, 2H) = [gate | up] -> out (N, H) = silu(gate) * up.
func (be *Backend) SwiGLUForward(out, gateup gpu.Buffer, N, H int) {
	o, gu := Data(out), Data(gateup)
	be.parallelFor(N, 4, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			g, u, dst := gu[2*i*H:(2*i+1)*H], gu[(2*i+1)*H:(2*i+2)*H], o[i*H:(i+1)*H]
			for j := swigluFwdVec(dst, g, u); j < len(dst); j++ {
				dst[j] = g[j] * sigmoid32(g[j]) * u[j]
			}
		}
	})
}

// SwiGLUBackward implements gpu.Backend: dgate += dout*up*sig*(1+gate*(1-sig)),
// dup += dout*silu(gate).
func (be *Backend) SwiGLUBackward(dgateup, dout, gateup gpu.Buffer, N, H int) {
	dgu, d, gu := Data(dgateup), Data(dout), Data(gateup)
	be.parallelFor(N, 4, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			g, u, dr := gu[2*i*H:(2*i+1)*H], gu[(2*i+1)*H:(2*i+2)*H], d[i*H:(i+1)*H]
			dg, du := dgu[2*i*H:(2*i+1)*H], dgu[(2*i+1)*H:(2*i+2)*H]
			for j := swigluBwdVec(dg, du, dr, g, u); j < len(dr); j++ {
				sg := sigmoid32(g[j])
				dg[j] += dr[j] * u[j] * sg * (1 + g[j]*(1-sg))
				du[j] += dr[j] * g[j] * sg
			}
		}
	})
}

// Add implements gpu.Backend: out = a + b.
func (be *Backend) Add(out, a, b gpu.Buffer, n int) {
	o, x, y := Data(out), Data(a), Data(b)
	be.parallelFor(n, 8192, func(lo, hi int) {
		for i := lo + addVec(o[lo:hi], x[lo:hi], y[lo:hi]); i < hi; i++ {
			o[i] = x[i] + y[i]
		}
	})
}

// Scale implements gpu.Backend: x *= s.
func (be *Backend) Scale(x gpu.Buffer, n int, s float32) {
	d := Data(x)
	be.parallelFor(n, 8192, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d[i] *= s
		}
	})
}
