package cpu

import (
	"math"

	"github.com/corl-project/corl/gpu"
)

func checkAttn(s gpu.AttnShape) {
	if s.NKV <= 0 || s.NH%s.NKV != 0 || s.Tq > s.Tk || s.Tk > s.Tcap {
		panic("gpu: bad attention shape")
	}
	if s.KLen != nil {
		if len(s.KLen) != s.B {
			panic("gpu: attention KLen needs one entry per batch row")
		}
		for _, n := range s.KLen {
			if int(n) < s.Tq || int(n) > s.Tk {
				panic("gpu: attention KLen outside [Tq, Tk]")
			}
		}
	}
}

// Attention runs per (batch, head) as small GEMMs on one goroutine each:
// scores = q k^T, probabilities in place, out = p v; backward likewise.
// Each product runs in strips of twelve queries (or keys), each only as
// far as causality makes it nonzero: a strip's scores up to the last key
// its last query sees, its mix over those keys, a key strip's gradients
// over the queries that see it (causalPack.strip). Keys past a query's
// position get probability exactly 0, so these give the whole-width
// products' bits (attentionSquare in the tests) at about half their work.

// AttentionForward implements gpu.Backend.
// q (B, Tq, NH*HS), k, v (B, Tcap, NKV*HS) -> out (B, Tq, NH*HS), att (B, NH, Tq, Tk).
// Query tq sits at position Tk-Tq+tq and attends to keys 0..that position.
func (be *Backend) AttentionForward(out, att, q, k, v gpu.Buffer, s gpu.AttnShape) {
	checkAttn(s)
	o, a, qd, kd, vd := Data(out), Data(att), Data(q), Data(k), Data(v)
	C, CKV, group := s.NH*s.HS, s.NKV*s.HS, s.NH/s.NKV
	scale := float32(1 / math.Sqrt(float64(s.HS)))
	if s.Tq < decodeRows && attnRows(s.HS) && s.B >= be.threads {
		// Decoding with a row per thread at least: a row's heads go
		// together, each cache row read once front to back for all of
		// them (not once per head at the row stride), with the bits of
		// one head at a time.
		stream := s.B*s.Tk*CKV*8 >= streamBytes
		be.parallelWorkers(s.B, func(_, lo, hi int) {
			for b := lo; b < hi; b++ {
				attendRowsAllHeads(o[b*s.Tq*C:], a[b*s.NH*s.Tq*s.Tk:][:s.NH*s.Tq*s.Tk], qd[b*s.Tq*C:], kd[b*s.Tcap*CKV:], vd[b*s.Tcap*CKV:], s, s.Keys(b), C, CKV, scale, stream)
			}
		})
		return
	}
	if s.Tq < decodeRows {
		be.parallelWorkers(s.B*s.NH, func(_, lo, hi int) {
			for bh := lo; bh < hi; bh++ {
				b, h := bh/s.NH, bh%s.NH
				qo, kvo := b*s.Tq*C+h*s.HS, b*s.Tcap*CKV+(h/group)*s.HS
				p := a[(b*s.NH+h)*s.Tq*s.Tk:][:s.Tq*s.Tk]
				attendRows(o[qo:], p, qd[qo:], kd[kvo:], vd[kvo:], s, s.Keys(b), C, CKV, scale)
			}
		})
		return
	}
	hp := (s.HS + nr - 1) / nr // panels of a head's values
	be.parallelWorkers(s.B*s.NH, func(w, lo, hi int) {
		scr := be.workerScratch(w)
		for bh := lo; bh < hi; bh++ {
			b, h := bh/s.NH, bh%s.NH
			qo, kvo := b*s.Tq*C+h*s.HS, b*s.Tcap*CKV+(h/group)*s.HS
			p := a[(b*s.NH+h)*s.Tq*s.Tk:][:s.Tq*s.Tk]
			tk := s.Keys(b) // keys past tk are never read: a cache may hold anything there
			kt := packCausal(&scr.packs[0], true, kd[kvo:], CKV, s.HS, tk)
			vs := packCausal(&scr.packs[1], false, vd[kvo:], CKV, tk, s.HS)
			// Twelve queries at a time, each strip's scores only as far
			// as its last query sees and its mix over those keys alone.
			for r0 := 0; r0 < s.Tq; r0 += mr {
				mh := min(mr, s.Tq-r0)
				kend := tk - s.Tq + r0 + mh
				kt.strip(scr.a[0], false, qd[qo:], C, r0, mh, 0, s.HS, (kend+nr-1)/nr, p, s.Tk, false)
				for tq := r0; tq < r0+mh; tq++ {
					pos := tk - s.Tq + tq
					row := p[tq*s.Tk : (tq+1)*s.Tk]
					softmaxRow(row[:pos+1], scale)
					clear(row[pos+1:])
				}
				vs.strip(scr.a[0], false, p, s.Tk, r0, mh, 0, kend, hp, o[qo:], C, false)
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
	hp := (s.HS + nr - 1) / nr // panels of a head's rows
	be.parallelWorkers(s.B*s.NKV, func(w, lo, hi int) {
		scr := be.workerScratch(w)
		if len(scr.rows) < s.Tq*s.Tk {
			scr.rows = make([]float32, s.Tq*s.Tk)
		}
		// Every row's first tk entries are written before they are read;
		// the rest are never read.
		dp := scr.rows[:s.Tq*s.Tk]
		pa := scr.a[0]
		for bk := lo; bk < hi; bk++ {
			b, kvh := bk/s.NKV, bk%s.NKV
			kvo := b*s.Tcap*CKV + kvh*s.HS
			tk := s.Keys(b)
			vt := packCausal(&scr.packs[0], true, vd[kvo:], CKV, s.HS, tk)
			ks := packCausal(&scr.packs[1], false, kd[kvo:], CKV, tk, s.HS)
			for h := kvh * group; h < (kvh+1)*group; h++ {
				qo := b*s.Tq*C + h*s.HS
				p := a[(b*s.NH+h)*s.Tq*s.Tk:][:s.Tq*s.Tk]
				// dp = dout v^T, twelve queries at a time as far as the
				// last of them sees (the rest of a row cleared, where p is
				// 0); ds = p * (dp - sum(p*dp)) * scale, in place in dp.
				for r0 := 0; r0 < s.Tq; r0 += mr {
					mh := min(mr, s.Tq-r0)
					jend := (tk - s.Tq + r0 + mh + nr - 1) / nr
					vt.strip(pa, false, d[qo:], C, r0, mh, 0, s.HS, jend, dp, s.Tk, false)
					for tq := r0; tq < r0+mh; tq++ {
						pr, dr := p[tq*s.Tk:tq*s.Tk+tk], dp[tq*s.Tk:tq*s.Tk+tk]
						clear(dr[min(jend*nr, tk):])
						sum := dot(pr, dr)
						for j := range dr {
							dr[j] = pr[j] * (dr[j] - sum) * scale
						}
					}
				}
				// dv += p^T dout, dk += ds^T q: twelve keys at a time, over
				// the queries that see them.
				dos := packCausal(&scr.packs[2], false, d[qo:], C, s.Tq, s.HS)
				qs := packCausal(&scr.packs[3], false, qd[qo:], C, s.Tq, s.HS)
				for j0 := 0; j0 < tk; j0 += mr {
					mh, q0 := min(mr, tk-j0), max(0, j0-(tk-s.Tq))
					dos.strip(pa, true, p, s.Tk, j0, mh, q0, s.Tq, hp, dvd[kvo:], CKV, true)
					qs.strip(pa, true, dp, s.Tk, j0, mh, q0, s.Tq, hp, dkd[kvo:], CKV, true)
				}
				// dq += ds k: twelve queries at a time, over the keys they see.
				for r0 := 0; r0 < s.Tq; r0 += mr {
					mh := min(mr, s.Tq-r0)
					ks.strip(pa, false, dp, s.Tk, r0, mh, 0, tk-s.Tq+r0+mh, hp, dqd[qo:], C, true)
				}
			}
		}
	})
}

// decodeRows is the query count below which attention uses dot products and
// axpys directly: packing the whole key and value cache for one or two query
// rows (decoding) costs more than the products themselves.
const decodeRows = 4

// attendRows is attention for a few query rows of one (batch, head):
// q, out rows at stride C; k, v rows at stride CKV; p (Tq, Tk) probabilities.
func attendRows(out, p, q, k, v []float32, s gpu.AttnShape, tk, C, CKV int, scale float32) {
	for tq := 0; tq < s.Tq; tq++ {
		pos := tk - s.Tq + tq
		qv := q[tq*C:][:s.HS]
		row := p[tq*s.Tk : (tq+1)*s.Tk]
		if !attnScores(row[:pos+1], qv, k, CKV) {
			for j := 0; j <= pos; j++ {
				row[j] = dot(qv, k[j*CKV:][:s.HS])
			}
		}
		softmaxRow(row[:pos+1], scale)
		ov := out[tq*C:][:s.HS]
		clear(ov)
		if !attnMix(ov, row[:pos+1], v, CKV) {
			for j := 0; j <= pos; j++ {
				axpy(ov, row[j], v[j*CKV:][:s.HS])
			}
		}
		clear(row[pos+1:])
	}
}

// streamBytes is the size of a decoding step's key and value rows (the
// whole batch's, one layer's) from which attention first reads a row's
// keys, then its values, front to back before the kernels read them a
// head at a time: rows that large come from memory, where the kernels'
// order (sixteen rows apart, then four chunks of a row 256 bytes apart)
// streams at 10-12 GB/s on a core and a plain front-to-back read at about
// twice that. Under it the rows are mostly in cache, where the extra read
// costs more than it saves.
const streamBytes = 2 << 20

// attendRowsAllHeads is attendRows for every head of one batch row at
// once (p holds its NH heads' (Tq, Tk) probabilities back to back); each
// head gets attendRows's bits. stream reads the rows first (streamBytes).
func attendRowsAllHeads(out, p, q, k, v []float32, s gpu.AttnShape, tk, C, CKV int, scale float32, stream bool) {
	group, ps := s.NH/s.NKV, s.Tq*s.Tk
	for tq := 0; tq < s.Tq; tq++ {
		n := tk - s.Tq + tq + 1 // keys this query sees
		if stream && tq == 0 {
			streamRows(k, tk*CKV)
		}
		attnRowScores(p[tq*s.Tk:], q[tq*C:], k, ps, CKV, s.HS, s.NKV, group, n)
		for h := 0; h < s.NH; h++ {
			row := p[h*ps+tq*s.Tk:][:s.Tk]
			softmaxRow(row[:n], scale)
			clear(row[n:])
		}
		ov := out[tq*C:][:C]
		clear(ov)
		if stream && tq == 0 {
			streamRows(v, tk*CKV)
		}
		attnRowMix(ov, p[tq*s.Tk:], v, ps, CKV, s.HS, s.NKV, group, n)
	}
}

// softmaxRow sets row = softmax(scale*row): the AVX-512 kernel where there
// is one, else softmaxRowGo. Training, prefill and decoding all come here, so
// a score row has the same probabilities whichever path computed it.
func softmaxRow(row []float32, scale float32) {
	if !softmaxRowVec(row, scale) {
		softmaxRowGo(row, scale)
	}
}

// softmaxRowGo is softmaxRow in Go: scale and maximum, exp32(x - max) and
// its sum in order, then a multiply by 1/sum.
func softmaxRowGo(row []float32, scale float32) {
	maxv := float32(math.Inf(-1))
	for j := range row {
		row[j] *= scale
		maxv = max(maxv, row[j])
	}
	var sum float32
	for j := range row {
		row[j] = exp32(row[j] - maxv)
		sum += row[j]
	}
	inv := 1 / sum
	for j := range row {
		row[j] *= inv
	}
}

// workerScratch returns worker w's private GEMM scratch for serial GEMMs.
func (be *Backend) workerScratch(w int) *gemmScratch {
	return be.serialScratch[w]
}

// dot returns sum a[i]*b[i]: the vector kernel over the largest multiple of
// 16, then four scalar accumulators.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	s, i := dotVec(a, b)
	var s0, s1, s2, s3 float32
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s + ((s0 + s1) + (s2 + s3))
}

// axpy computes y += alpha*x.
func axpy(y []float32, alpha float32, x []float32) {
	x = x[:len(y)]
	for i := axpyVec(y, alpha, x); i < len(y); i++ {
		y[i] += alpha * x[i]
	}
}
