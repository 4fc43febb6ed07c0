package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/corl-project/corl/gpu"
)

// attentionSquare is training attention as whole-width products per
// (batch, head): every query against every key, then the probabilities
// past a query's position cleared; the causal strips must give its bits.
func attentionSquare(o, a, qd, kd, vd []float32, s gpu.AttnShape) {
	C, CKV, group := s.NH*s.HS, s.NKV*s.HS, s.NH/s.NKV
	scale := float32(1 / math.Sqrt(float64(s.HS)))
	scr := newGemmScratch(1)
	for bh := 0; bh < s.B*s.NH; bh++ {
		b, h := bh/s.NH, bh%s.NH
		qo, kvo := b*s.Tq*C+h*s.HS, b*s.Tcap*CKV+(h/group)*s.HS
		p := a[(b*s.NH+h)*s.Tq*s.Tk:][:s.Tq*s.Tk]
		tk := s.Keys(b)
		gemmSerial(scr, false, true, s.Tq, tk, s.HS, qd[qo:], C, kd[kvo:], CKV, p, s.Tk, false)
		for tq := 0; tq < s.Tq; tq++ {
			pos := tk - s.Tq + tq
			row := p[tq*s.Tk : (tq+1)*s.Tk]
			softmaxRow(row[:pos+1], scale)
			clear(row[pos+1:])
		}
		gemmSerial(scr, false, false, s.Tq, s.HS, tk, p, s.Tk, vd[kvo:], CKV, o[qo:], C, false)
	}
}

// attentionBackwardSquare is attentionSquare's backward, likewise whole-width.
func attentionBackwardSquare(dqd, dkd, dvd, d, a, qd, kd, vd []float32, s gpu.AttnShape) {
	C, CKV, group := s.NH*s.HS, s.NKV*s.HS, s.NH/s.NKV
	scale := float32(1 / math.Sqrt(float64(s.HS)))
	scr := newGemmScratch(1)
	dp := make([]float32, s.Tq*s.Tk)
	for bk := 0; bk < s.B*s.NKV; bk++ {
		b, kvh := bk/s.NKV, bk%s.NKV
		kvo := b*s.Tcap*CKV + kvh*s.HS
		tk := s.Keys(b)
		for h := kvh * group; h < (kvh+1)*group; h++ {
			qo := b*s.Tq*C + h*s.HS
			p := a[(b*s.NH+h)*s.Tq*s.Tk:][:s.Tq*s.Tk]
			gemmSerial(scr, false, true, s.Tq, tk, s.HS, d[qo:], C, vd[kvo:], CKV, dp, s.Tk, false)
			gemmSerial(scr, true, false, tk, s.HS, s.Tq, p, s.Tk, d[qo:], C, dvd[kvo:], CKV, true)
			for tq := 0; tq < s.Tq; tq++ {
				pr, dr := p[tq*s.Tk:tq*s.Tk+tk], dp[tq*s.Tk:tq*s.Tk+tk]
				sum := dot(pr, dr)
				for j := range dr {
					dr[j] = pr[j] * (dr[j] - sum) * scale
				}
			}
			gemmSerial(scr, false, false, s.Tq, s.HS, tk, dp, s.Tk, kd[kvo:], CKV, dqd[qo:], C, true)
			gemmSerial(scr, true, false, tk, s.HS, s.Tq, dp, s.Tk, qd[qo:], C, dkd[kvo:], CKV, true)
		}
	}
}

// TestCausalAttentionMatchesWholeWidth: attention forward and backward
// through causal strips (each product only as far as a strip's queries
// see, or over the queries that see a strip's keys) give, bit for bit,
// the whole-width products' outputs and gradients: training (Tq = Tk),
// a prompt after cached rows (Tq < Tk, rows of other lengths), more
// positions than a K block (kc), heads of 16, 24, 64 and odd widths,
// grouped and multi-query heads, on one thread and on three.
func TestCausalAttentionMatchesWholeWidth(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct {
		B, Tq, Tk, NH, NKV, HS int
		klen                   []int32
	}{
		{2, 88, 88, 4, 2, 16, nil},
		{3, 37, 37, 4, 4, 24, nil},
		{1, 300, 300, 2, 1, 64, nil},
		{2, 13, 45, 3, 1, 40, []int32{45, 20}},
		{1, 4, 9, 2, 2, 5, nil},
		{2, 270, 530, 2, 2, 8, []int32{530, 301}},
		{1, 33, 33, 2, 1, 96, nil},
	} {
		s := gpu.AttnShape{B: c.B, Tq: c.Tq, Tk: c.Tk, Tcap: c.Tk + 3, NH: c.NH, NKV: c.NKV, HS: c.HS, KLen: c.klen}
		C, CKV := c.NH*c.HS, c.NKV*c.HS
		q, k, v := randSlice(r, c.B*c.Tq*C), randSlice(r, c.B*s.Tcap*CKV), randSlice(r, c.B*s.Tcap*CKV)
		dout := randSlice(r, c.B*c.Tq*C)
		dq0, dk0, dv0 := randSlice(r, len(q)), randSlice(r, len(k)), randSlice(r, len(v))
		wantO, wantA := make([]float32, len(q)), make([]float32, c.B*c.NH*c.Tq*c.Tk)
		attentionSquare(wantO, wantA, q, k, v, s)
		wantQ, wantK, wantV := append([]float32(nil), dq0...), append([]float32(nil), dk0...), append([]float32(nil), dv0...)
		attentionBackwardSquare(wantQ, wantK, wantV, dout, wantA, q, k, v, s)
		for _, threads := range []int{1, 3} {
			name := fmt.Sprintf("B%d Tq%d Tk%d NH%d NKV%d HS%d, %d threads", c.B, c.Tq, c.Tk, c.NH, c.NKV, c.HS, threads)
			be := New(threads)
			o, a := Wrap(make([]float32, len(q))), Wrap(randSlice(r, len(wantA)))
			be.AttentionForward(o, a, Wrap(q), Wrap(k), Wrap(v), s)
			dq, dk, dv := Wrap(append([]float32(nil), dq0...)), Wrap(append([]float32(nil), dk0...)), Wrap(append([]float32(nil), dv0...))
			be.AttentionBackward(dq, dk, dv, Wrap(dout), a, Wrap(q), Wrap(k), Wrap(v), s)
			for _, x := range []struct {
				what      string
				got, want []float32
			}{{"out", Data(o), wantO}, {"probabilities", Data(a), wantA}, {"dq", Data(dq), wantQ}, {"dk", Data(dk), wantK}, {"dv", Data(dv), wantV}} {
				for i := range x.want {
					if math.Float32bits(x.got[i]) != math.Float32bits(x.want[i]) {
						t.Fatalf("%s: %s[%d] = %v, whole-width %v", name, x.what, i, x.got[i], x.want[i])
					}
				}
			}
		}
	}
}
