package cpu

import (
	"github.com/corl-project/corl/internal/narrow"
	"math"
	"unsafe"

	"github.com/corl-project/corl/gpu"
)

// The binary16 key/value cache (gpu.HalfKV). Decoding reads every slot's
// keys and values once a step, so with a float32 cache the step is bound
// by memory bandwidth, not arithmetic; binary16 halves those bytes. Values
// are rounded once, when stored, and widened exactly when read, so
// attention has the bits of float32 attention over the stored values: the
// scores dot's, the mixed outputs axpy's. A slot's heads lie apart
// (head-major), each head's keys back to back, so the score kernel reads
// one stream per head, front to back.

// halves views a float32 buffer's memory as binary16 values, two per
// element.
func halves(d []float32) []uint16 {
	if len(d) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&d[0])), 2*len(d))
}

// storeHalfRow sets dst[i] = narrow.F16(src[i]) and src[i] to its widened
// value.
func storeHalfRow(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i := storeHalfVec(dst, src); i < len(src); i++ {
		dst[i] = narrow.F16(src[i])
		src[i] = narrow.FromF16(dst[i])
	}
}

// widenHalf sets dst[i] = narrow.FromF16(src[i]).
func widenHalf(dst []float32, src []uint16) {
	src = src[:len(dst)]
	for i := widenHalfVec(dst, src); i < len(dst); i++ {
		dst[i] = narrow.FromF16(src[i])
	}
}

// StoreHalf implements gpu.HalfKV.
func (be *Backend) StoreHalf(dst gpu.Buffer, at []int, src gpu.Buffer, nkv, hs, tcap int) {
	d, s := halves(Data(dst)), Data(src)
	w := nkv * hs
	if len(at)*w > len(s) {
		panic("gpu: half store of more rows than the source holds")
	}
	for i, o := range at {
		if o < 0 {
			continue
		}
		if o+(nkv-1)*tcap*hs+hs > len(d) {
			panic("gpu: half store past the cache")
		}
		for h := 0; h < nkv; h++ {
			storeHalfRow(d[o+h*tcap*hs:][:hs], s[i*w+h*hs:][:hs])
		}
	}
}

// AttentionForwardHalf implements gpu.HalfKV.
func (be *Backend) AttentionForwardHalf(out, att, q, k, v gpu.Buffer, s gpu.AttnShape) {
	checkAttn(s)
	if s.Tq != 1 || s.HS%2 != 0 {
		panic("gpu: half-cache attention takes one query row and an even head size")
	}
	o, a, qd := Data(out), Data(att), Data(q)
	kd, vd := halves(Data(k)), halves(Data(v))
	C, slab := s.NH*s.HS, s.NKV*s.Tcap*s.HS
	if len(kd) < s.B*slab || len(vd) < s.B*slab {
		panic("gpu: half cache smaller than its shape")
	}
	scale := float32(1 / math.Sqrt(float64(s.HS)))
	// Head sizes off the binary16 kernels but on the float32 ones widen a
	// head's rows first (about two thirds of the kernels' speed at 64).
	widen := !halfRows(s.HS) && halfVec() && attnRows(s.HS)
	be.parallelWorkers(s.B, func(w, lo, hi int) {
		scr := be.workerScratch(w)
		n := s.HS
		if widen {
			n = s.Tk * s.HS
		}
		if len(scr.rows) < n {
			scr.rows = make([]float32, n)
		}
		for b := lo; b < hi; b++ {
			o, a, q, k, v := o[b*C:][:C], a[b*s.NH*s.Tk:][:s.NH*s.Tk], qd[b*C:][:C], kd[b*slab:][:slab], vd[b*slab:][:slab]
			if widen {
				attendHalfWidened(o, a, q, k, v, s, s.Keys(b), scale, scr.rows[:n])
				continue
			}
			attendHalf(o, a, q, k, v, s, s.Keys(b), scale, scr.rows[:s.HS])
		}
	})
}

// attendHalfWidened is attendHalf by the float32 row kernels, for head
// sizes the binary16 kernels do not take: each head's keys, then values,
// widened into rows (Tk*HS floats of scratch) first.
func attendHalfWidened(out, p, q []float32, k, v []uint16, s gpu.AttnShape, n int, scale float32, rows []float32) {
	hs, group, ts := s.HS, s.NH/s.NKV, s.Tcap*s.HS
	rows = rows[:n*hs]
	for kvh := 0; kvh < s.NKV; kvh++ {
		widenHalf(rows, k[kvh*ts:])
		attnRowScores(p[kvh*group*s.Tk:], q[kvh*group*hs:], rows, s.Tk, hs, hs, 1, group, n)
	}
	for h := 0; h < s.NH; h++ {
		r := p[h*s.Tk:][:s.Tk]
		softmaxRow(r[:n], scale)
		clear(r[n:])
	}
	clear(out)
	for kvh := 0; kvh < s.NKV; kvh++ {
		widenHalf(rows, v[kvh*ts:])
		attnRowMix(out[kvh*group*hs:], p[kvh*group*s.Tk:], rows, s.Tk, hs, hs, 1, group, n)
	}
}

// halfMixKeys is how many keys the four-head mix takes at a time: their
// value rows (four heads' of them) stay in L1 across the chunk columns.
const halfMixKeys = 32

// attendHalf is one slot's decoding attention over its half cache k, v
// (NKV heads of Tcap rows of HS values): p holds the NH heads' Tk
// probabilities back to back; row is HS floats of scratch.
func attendHalf(out, p, q []float32, k, v []uint16, s gpu.AttnShape, n int, scale float32, row []float32) {
	hs, group, ts := s.HS, s.NH/s.NKV, s.Tcap*s.HS
	vec := halfRows(hs)
	for kvh := 0; kvh < s.NKV; kvh++ {
		kh, qh, ph := k[kvh*ts:][:ts], q[kvh*group*hs:][:group*hs], p[kvh*group*s.Tk:][:group*s.Tk]
		j := 0
		if vec {
			j = halfScores4(ph, qh, kh, s.Tk, hs, group, n)
		}
		for ; j < n; j++ {
			widenHalf(row, kh[j*hs:])
			for g := 0; g < group; g++ {
				ph[g*s.Tk+j] = dot(qh[g*hs:][:hs], row)
			}
		}
	}
	for h := 0; h < s.NH; h++ {
		r := p[h*s.Tk:][:s.Tk]
		softmaxRow(r[:n], scale)
		clear(r[n:])
	}
	clear(out)
	if vec && s.NH%4 == 0 {
		for h := 0; h < s.NH; h += 4 {
			var kvoff [4]int
			for i := range kvoff {
				kvoff[i] = (h + i) / group * ts
			}
			for j := 0; j < n; j += halfMixKeys {
				var off [4]int
				for i, o := range kvoff {
					off[i] = o + j*hs
				}
				halfMix4(out[h*hs:], p[h*s.Tk+j:], v, s.Tk, hs, min(halfMixKeys, n-j), &off)
			}
		}
		return
	}
	for kvh := 0; kvh < s.NKV; kvh++ {
		vh := v[kvh*ts:][:ts]
		for j := 0; j < n; j++ {
			widenHalf(row, vh[j*hs:])
			for g := kvh * group; g < (kvh+1)*group; g++ {
				axpy(out[g*hs:][:hs], p[g*s.Tk+j], row)
			}
		}
	}
}
