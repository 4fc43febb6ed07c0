package gputest

import (
	"fmt"
	"math"

	"github.com/corl-project/corl/gpu"
)

// Forward tolerances: float32 arithmetic against float64 references. Values are
// O(1); a length-K reduction in float32 loses about K * 6e-8 relative in the
// worst case, so reductions over K <= 1000 get atol 1e-4 and pointwise ops 1e-6.
// Gradient tolerances (gradTol): float32 backward against float64 central
// differences; cancellation in the norm backward costs a few more bits.
const (
	gradAtol = 2e-4
	gradRtol = 2e-3
)

func testEmbedding(h *harness) {
	for _, sh := range [][3]int{{1, 1, 1}, {6, 5, 7}, {51, 33, 50}} {
		N, C, V := sh[0], sh[1], sh[2]
		maxT := 9
		wte, wpe := h.rnd(V*C, 1), h.rnd(maxT*C, 1)
		ids, pos := h.ids(N, V), h.ids(N, maxT) // positions in any order, repeated
		out := h.be.Alloc(N * C)
		h.be.EmbeddingForward(out, h.up(wte), h.up(wpe), ids, pos, N, C)
		h.close(fmt.Sprintf("embedding %v", sh), h.down(out), refEmbedding(wte, wpe, ids, pos, N, C), 1e-6, 1e-6)
		h.be.EmbeddingForward(out, h.up(wte), nil, ids, nil, N, C)
		h.close(fmt.Sprintf("embedding %v no positions", sh), h.down(out), refEmbedding(wte, nil, ids, nil, N, C), 1e-6, 1e-6)
	}
	N, C, V, maxT := 10, 3, 4, 3 // V, maxT < N, so ids and positions repeat and gradients accumulate
	wte, wpe := h.rnd(V*C, 1), h.rnd(maxT*C, 1)
	ids, pos := h.ids(N, V), h.ids(N, maxT)
	dout := h.rnd(N*C, 1)
	g0te, g0pe := h.rnd(V*C, 1), h.rnd(maxT*C, 1)
	dte, dpe := h.up(g0te), h.up(g0pe)
	h.be.EmbeddingBackward(dte, dpe, h.up(dout), ids, pos, N, C)
	h.gradCheck("embedding", [][]float64{wte, wpe}, func(in [][]float64) []float64 {
		return refEmbedding(in[0], in[1], ids, pos, N, C)
	}, dout, [][]float64{sub(h.down(dte), g0te), sub(h.down(dpe), g0pe)}, gradAtol, gradRtol)
}

// positions returns B rows of T consecutive positions starting at pos0.
func positions(B, T, pos0 int) []int32 {
	p := make([]int32, B*T)
	for i := range p {
		p[i] = int32(pos0 + i%T)
	}
	return p
}

func testMatMul(h *harness) {
	for _, sh := range [][3]int{{1, 1, 1}, {1, 7, 3}, {5, 1, 9}, {13, 17, 31}, {64, 96, 128}, {97, 131, 257}, {300, 40, 20}} {
		N, C, OC := sh[0], sh[1], sh[2]
		inp, w, bias := h.rnd(N*C, 1), h.rnd(OC*C, 1), h.rnd(OC, 1)
		for _, withBias := range []bool{false, true} {
			b := bias
			if !withBias {
				b = nil
			}
			out := h.be.Alloc(N * OC)
			h.be.MatMulForward(out, h.up(inp), h.up(w), h.up(b), N, C, OC)
			h.close(fmt.Sprintf("matmul N=%d C=%d OC=%d bias=%v", N, C, OC, withBias), h.down(out), refMatMul(inp, w, b, N, C, OC), 1e-4, 1e-5)
		}
		if N*C*OC > 100000 {
			matMulBackwardLarge(h, N, C, OC)
			continue
		}
		// Backward on the larger shapes against the exact float64 expression
		// (finite differences of a linear map are exact up to rounding anyway).
		dout := h.rnd(N*OC, 1)
		g0i, g0w, g0b := h.rnd(N*C, 1), h.rnd(OC*C, 1), h.rnd(OC, 1)
		di, dw, db := h.up(g0i), h.up(g0w), h.up(g0b)
		h.be.MatMulBackward(di, dw, db, h.up(dout), h.up(inp), h.up(w), N, C, OC)
		h.gradCheck(fmt.Sprintf("matmul N=%d C=%d OC=%d", N, C, OC), [][]float64{inp, w, bias}, func(in [][]float64) []float64 {
			return refMatMul(in[0], in[1], in[2], N, C, OC)
		}, dout, [][]float64{sub(h.down(di), g0i), sub(h.down(dw), g0w), sub(h.down(db), g0b)}, 1e-4*math.Sqrt(float64(N+OC)), gradRtol)
	}
	// nil gradients are skipped.
	N, C, OC := 4, 3, 2
	di := h.be.Alloc(N * C)
	h.be.MatMulBackward(di, nil, nil, h.up(h.rnd(N*OC, 1)), h.up(h.rnd(N*C, 1)), h.up(h.rnd(OC*C, 1)), N, C, OC)
	if s := h.be.SumSquares(di, N*C); s == 0 {
		h.t.Fatal("matmul backward with only dinp produced no gradient")
	}
}

// testMatMulLarge covers every block and tile path of a blocked GEMM, in the
// forward and in both backward products (dinp and dw have other M, N, K):
// rows past one row block (144), a reduction past one K block (256), columns
// past one column block (4096); and a few rows of each GPT-2 124M shape
// (C 768, 2304 qkv, 3072 MLP, 50257 vocabulary). Checked against the exact
// float64 expressions.
func testMatMulLarge(h *harness) {
	for _, sh := range [][3]int{{150, 300, 4200}, {4, 768, 2304}, {4, 768, 3072}, {4, 3072, 768}, {3, 768, 50257}} {
		N, C, OC := sh[0], sh[1], sh[2]
		inp, w, bias := h.rnd(N*C, 1), h.rnd(OC*C, 1), h.rnd(OC, 1)
		out := h.be.Alloc(N * OC)
		h.be.MatMulForward(out, h.up(inp), h.up(w), h.up(bias), N, C, OC)
		// float32 sums of C products of unit-scale numbers: errors grow like sqrt(C).
		h.close(fmt.Sprintf("matmul N=%d C=%d OC=%d", N, C, OC), h.down(out), refMatMul(inp, w, bias, N, C, OC), 2e-6*float64(C), 1e-5)
		matMulBackwardLarge(h, N, C, OC)
	}
}

// matMulBackwardLarge checks MatMulBackward's accumulation (+=) into every
// gradient against refMatMulBackward.
func matMulBackwardLarge(h *harness, N, C, OC int) {
	inp, w, dout := h.rnd(N*C, 1), h.rnd(OC*C, 1), h.rnd(N*OC, 1)
	g0i, g0w, g0b := h.rnd(N*C, 1), h.rnd(OC*C, 1), h.rnd(OC, 1)
	di, dw, db := h.up(g0i), h.up(g0w), h.up(g0b)
	h.be.MatMulBackward(di, dw, db, h.up(dout), h.up(inp), h.up(w), N, C, OC)
	wi, ww, wb := refMatMulBackward(dout, inp, w, N, C, OC)
	name := fmt.Sprintf("matmul backward N=%d C=%d OC=%d", N, C, OC)
	// Each gradient sums OC (dinp) or N (dw, dbias) unit-scale products.
	h.close(name+" dinp", sub(h.down(di), g0i), wi, 2e-6*float64(OC), 1e-5)
	h.close(name+" dw", sub(h.down(dw), g0w), ww, 2e-6*float64(N)+1e-6, 1e-5)
	h.close(name+" dbias", sub(h.down(db), g0b), wb, 2e-6*float64(N)+1e-6, 1e-5)
}

func testRMSNorm(h *harness) {
	const eps = 1e-5
	for _, sh := range [][2]int{{1, 1}, {3, 5}, {17, 64}, {9, 129}} {
		N, C := sh[0], sh[1]
		inp, w := h.rnd(N*C, 2), h.rnd(C, 1)
		out, rstd := h.be.Alloc(N*C), h.be.Alloc(N)
		h.be.RMSNormForward(out, rstd, h.up(inp), h.up(w), N, C, eps)
		h.close(fmt.Sprintf("rmsnorm %v", sh), h.down(out), refRMSNorm(inp, w, N, C, eps), 1e-5, 1e-5)
		dout := h.rnd(N*C, 1)
		g0i, g0w := h.rnd(N*C, 1), h.rnd(C, 1)
		di, dw := h.up(g0i), h.up(g0w)
		h.be.RMSNormBackward(di, dw, h.up(dout), h.up(inp), h.up(w), rstd, N, C)
		h.gradCheck(fmt.Sprintf("rmsnorm %v", sh), [][]float64{inp, w}, func(in [][]float64) []float64 {
			return refRMSNorm(in[0], in[1], N, C, eps)
		}, dout, [][]float64{sub(h.down(di), g0i), sub(h.down(dw), g0w)}, gradAtol, gradRtol)
	}
}

func testLayerNorm(h *harness) {
	const eps = 1e-5
	for _, sh := range [][2]int{{1, 2}, {3, 5}, {17, 64}, {9, 129}} {
		N, C := sh[0], sh[1]
		inp, w, b := h.rnd(N*C, 2), h.rnd(C, 1), h.rnd(C, 1)
		out, mean, rstd := h.be.Alloc(N*C), h.be.Alloc(N), h.be.Alloc(N)
		h.be.LayerNormForward(out, mean, rstd, h.up(inp), h.up(w), h.up(b), N, C, eps)
		h.close(fmt.Sprintf("layernorm %v", sh), h.down(out), refLayerNorm(inp, w, b, N, C, eps), 1e-5, 1e-5)
		dout := h.rnd(N*C, 1)
		g0i, g0w, g0b := h.rnd(N*C, 1), h.rnd(C, 1), h.rnd(C, 1)
		di, dw, db := h.up(g0i), h.up(g0w), h.up(g0b)
		h.be.LayerNormBackward(di, dw, db, h.up(dout), h.up(inp), h.up(w), mean, rstd, N, C)
		h.gradCheck(fmt.Sprintf("layernorm %v", sh), [][]float64{inp, w, b}, func(in [][]float64) []float64 {
			return refLayerNorm(in[0], in[1], in[2], N, C, eps)
		}, dout, [][]float64{sub(h.down(di), g0i), sub(h.down(dw), g0w), sub(h.down(db), g0b)}, gradAtol, gradRtol)
	}
}

func testRoPE(h *harness) {
	const theta = 10000
	for _, sh := range [][5]int{{1, 1, 1, 2, 0}, {2, 3, 2, 4, 5}, {1, 9, 3, 16, 1}, {2, 5, 1, 64, 100}} {
		B, T, H, HS, pos0 := sh[0], sh[1], sh[2], sh[3], sh[4]
		N := B * T
		pos := positions(B, T, pos0)
		if sh[4] == 5 {
			pos = h.ids(N, 300) // arbitrary per-token positions, as in a decoding batch
		}
		x := h.rnd(N*H*HS, 1)
		xb := h.up(x)
		h.be.RoPEForward(xb, pos, N, H, HS, theta)
		// Angles up to ~300 rad are computed in float64 and rounded once.
		h.close(fmt.Sprintf("rope %v", sh), h.down(xb), refRoPE(x, pos, N, H, HS, theta), 1e-6, 1e-5)
		dout := h.rnd(len(x), 1)
		db := h.up(dout)
		h.be.RoPEBackward(db, pos, N, H, HS, theta)
		h.gradCheck(fmt.Sprintf("rope %v", sh), [][]float64{x}, func(in [][]float64) []float64 {
			return refRoPE(in[0], pos, N, H, HS, theta)
		}, dout, [][]float64{h.down(db)}, gradAtol, gradRtol)
	}
}

// attnInputs draws q, k and v for s, with the cache slots past each row's
// keys holding NaN and Inf: they may hold anything and must not be read.
func attnInputs(h *harness, s gpu.AttnShape) (q, k, v []float64) {
	C, CKV := s.NH*s.HS, s.NKV*s.HS
	q, k, v = h.rnd(s.B*s.Tq*C, 1), h.rnd(s.B*s.Tcap*CKV, 1), h.rnd(s.B*s.Tcap*CKV, 1)
	for b := 0; b < s.B; b++ {
		for t := s.Keys(b); t < s.Tcap; t++ {
			for i := 0; i < CKV; i++ {
				k[(b*s.Tcap+t)*CKV+i], v[(b*s.Tcap+t)*CKV+i] = math.NaN(), math.Inf(1)
			}
		}
	}
	return q, k, v
}

func testAttention(h *harness) {
	shapes := []gpu.AttnShape{
		{B: 1, Tq: 1, Tk: 1, Tcap: 1, NH: 1, NKV: 1, HS: 1},
		{B: 2, Tq: 5, Tk: 5, Tcap: 5, NH: 4, NKV: 2, HS: 3},
		{B: 3, Tq: 7, Tk: 7, Tcap: 7, NH: 3, NKV: 3, HS: 8},
		{B: 2, Tq: 1, Tk: 6, Tcap: 9, NH: 4, NKV: 1, HS: 4}, // one decode step from a cache
		{B: 1, Tq: 3, Tk: 8, Tcap: 8, NH: 2, NKV: 2, HS: 5}, // a chunk appended to a prefix
		{B: 2, Tq: 33, Tk: 33, Tcap: 33, NH: 4, NKV: 2, HS: 32},
		// A decoding batch: rows at different positions in one cache.
		{B: 3, Tq: 1, Tk: 7, Tcap: 10, NH: 4, NKV: 2, HS: 4, KLen: []int32{7, 1, 4}},
		{B: 2, Tq: 2, Tk: 6, Tcap: 6, NH: 2, NKV: 1, HS: 3, KLen: []int32{2, 6}},
	}
	for _, s := range shapes {
		C := s.NH * s.HS
		q, k, v := attnInputs(h, s)
		out, att := h.be.Alloc(s.B*s.Tq*C), h.be.Alloc(s.B*s.NH*s.Tq*s.Tk)
		qb, kb, vb := h.up(q), h.up(k), h.up(v)
		h.be.AttentionForward(out, att, qb, kb, vb, s)
		h.close(fmt.Sprintf("attention %+v", s), h.down(out), refAttention(q, k, v, s), 1e-5, 1e-4)
		if s.KLen != nil {
			continue // a decoding batch is never differentiated
		}
		if s.Tq > 8 {
			attentionBackwardLarge(h, s, q, k, v, att)
			continue
		}
		dout := h.rnd(len(q), 1)
		g0q, g0k, g0v := h.rnd(len(q), 1), h.rnd(len(k), 1), h.rnd(len(v), 1)
		dq, dk, dv := h.up(g0q), h.up(g0k), h.up(g0v)
		h.be.AttentionBackward(dq, dk, dv, h.up(dout), att, qb, kb, vb, s)
		h.gradCheck(fmt.Sprintf("attention %+v", s), [][]float64{q, k, v}, func(in [][]float64) []float64 {
			return refAttention(in[0], in[1], in[2], s)
		}, dout, [][]float64{sub(h.down(dq), g0q), sub(h.down(dk), g0k), sub(h.down(dv), g0v)}, gradAtol, gradRtol)
	}
}

// testFlashAttention checks a backend's tiled attention (gpu.FlashAttention)
// against the float64 references on the shapes testAttention takes (query
// and key counts across the kernels' tiles of 32 and blocks of 256, a
// cache whose slots past a row's keys hold NaN and Inf, decoding batches,
// GQA, head sizes 1 to gpu.FlashMaxHead): out, lse, and the backward's
// dq, dk, dv accumulated onto what the buffers held.
func testFlashAttention(h *harness) {
	fa, ok := h.be.(gpu.FlashAttention)
	if !ok {
		h.t.Skipf("%s has no tiled attention (gpu.FlashAttention)", h.be.Name())
	}
	shapes := []gpu.AttnShape{
		{B: 1, Tq: 1, Tk: 1, Tcap: 1, NH: 1, NKV: 1, HS: 1},
		{B: 2, Tq: 5, Tk: 5, Tcap: 5, NH: 4, NKV: 2, HS: 3},
		{B: 2, Tq: 1, Tk: 6, Tcap: 9, NH: 4, NKV: 1, HS: 4},
		{B: 1, Tq: 3, Tk: 8, Tcap: 8, NH: 2, NKV: 2, HS: 5},
		{B: 2, Tq: 33, Tk: 33, Tcap: 33, NH: 4, NKV: 2, HS: 32},
		{B: 3, Tq: 1, Tk: 7, Tcap: 10, NH: 4, NKV: 2, HS: 4, KLen: []int32{7, 1, 4}},
		{B: 2, Tq: 2, Tk: 6, Tcap: 6, NH: 2, NKV: 1, HS: 3, KLen: []int32{2, 6}},
		{B: 1, Tq: 300, Tk: 300, Tcap: 300, NH: 2, NKV: 1, HS: 16},
		{B: 1, Tq: 70, Tk: 70, Tcap: 70, NH: 2, NKV: 2, HS: gpu.FlashMaxHead},
	}
	for _, s := range shapes {
		C := s.NH * s.HS
		q, k, v := attnInputs(h, s)
		out, lse := h.be.Alloc(s.B*s.Tq*C), h.be.Alloc(s.B*s.NH*s.Tq)
		qb, kb, vb := h.up(q), h.up(k), h.up(v)
		fa.FlashAttentionForward(out, lse, qb, kb, vb, s)
		name := fmt.Sprintf("flash attention %+v", s)
		h.close(name+" out", h.down(out), refAttention(q, k, v, s), 1e-5, 1e-4)
		h.close(name+" lse", h.down(lse), refLSE(q, k, s), 1e-5, 1e-5)
		if s.KLen != nil {
			continue
		}
		dout := h.rnd(len(q), 1)
		g0q, g0k, g0v := h.rnd(len(q), 1), h.rnd(len(k), 1), h.rnd(len(v), 1)
		dq, dk, dv := h.up(g0q), h.up(g0k), h.up(g0v)
		fa.FlashAttentionBackward(dq, dk, dv, h.up(dout), out, lse, qb, kb, vb, s)
		wq, wk, wv := refAttentionBackward(dout, q, k, v, s)
		tol := 2e-6 * float64(max(s.Tq, s.Tk, s.HS))
		h.close(name+" dq", sub(h.down(dq), g0q), wq, tol, 1e-4)
		h.close(name+" dk", sub(h.down(dk), g0k), wk, tol, 1e-4)
		h.close(name+" dv", sub(h.down(dv), g0v), wv, tol, 1e-4)
	}
}

// testAttentionLarge differentiates attention where finite differences are
// too slow: more than 256 keys per query, GQA, and a GPT-2 124M layer's
// heads (12 x 64).
func testAttentionLarge(h *harness) {
	for _, s := range []gpu.AttnShape{
		{B: 1, Tq: 300, Tk: 300, Tcap: 300, NH: 2, NKV: 1, HS: 16},
		{B: 2, Tq: 40, Tk: 40, Tcap: 40, NH: 4, NKV: 2, HS: 24},
		{B: 1, Tq: 64, Tk: 64, Tcap: 64, NH: 12, NKV: 12, HS: 64},
	} {
		C, CKV := s.NH*s.HS, s.NKV*s.HS
		q, k, v := h.rnd(s.B*s.Tq*C, 1), h.rnd(s.B*s.Tcap*CKV, 1), h.rnd(s.B*s.Tcap*CKV, 1)
		out, att := h.be.Alloc(s.B*s.Tq*C), h.be.Alloc(s.B*s.NH*s.Tq*s.Tk)
		h.be.AttentionForward(out, att, h.up(q), h.up(k), h.up(v), s)
		h.close(fmt.Sprintf("attention %+v", s), h.down(out), refAttention(q, k, v, s), 1e-5, 1e-4)
		attentionBackwardLarge(h, s, q, k, v, att)
	}
}

// attentionBackwardLarge checks AttentionBackward (+= into dq, dk, dv) after
// the forward that filled att, against refAttentionBackward.
func attentionBackwardLarge(h *harness, s gpu.AttnShape, q, k, v []float64, att gpu.Buffer) {
	dout := h.rnd(len(q), 1)
	g0q, g0k, g0v := h.rnd(len(q), 1), h.rnd(len(k), 1), h.rnd(len(v), 1)
	dq, dk, dv := h.up(g0q), h.up(g0k), h.up(g0v)
	h.be.AttentionBackward(dq, dk, dv, h.up(dout), att, h.up(q), h.up(k), h.up(v), s)
	wq, wk, wv := refAttentionBackward(dout, q, k, v, s)
	name := fmt.Sprintf("attention backward %+v", s)
	// Sums over up to Tk keys (dq) or Tq queries (dk, dv) of unit-scale
	// terms in float32.
	tol := 2e-6 * float64(max(s.Tq, s.Tk))
	h.close(name+" dq", sub(h.down(dq), g0q), wq, tol, 1e-4)
	h.close(name+" dk", sub(h.down(dk), g0k), wk, tol, 1e-4)
	h.close(name+" dv", sub(h.down(dv), g0v), wv, tol, 1e-4)
}

func testGELU(h *harness) {
	for _, n := range []int{1, 7, 1000, 9001} {
		x := h.rnd(n, 4)
		out := h.be.Alloc(n)
		xb := h.up(x)
		h.be.GELUForward(out, xb, n)
		h.close(fmt.Sprintf("gelu n=%d", n), h.down(out), refGELU(x), 1e-6, 1e-5)
		if n > 1000 {
			continue
		}
		dout, g0 := h.rnd(n, 1), h.rnd(n, 1)
		dx := h.up(g0)
		h.be.GELUBackward(dx, h.up(dout), xb, n)
		h.gradCheck(fmt.Sprintf("gelu n=%d", n), [][]float64{x}, func(in [][]float64) []float64 { return refGELU(in[0]) },
			dout, [][]float64{sub(h.down(dx), g0)}, gradAtol, gradRtol)
	}
}

func testSwiGLU(h *harness) {
	for _, sh := range [][2]int{{1, 1}, {3, 5}, {17, 64}} {
		N, H := sh[0], sh[1]
		gu := h.rnd(N*2*H, 4)
		out := h.be.Alloc(N * H)
		gb := h.up(gu)
		h.be.SwiGLUForward(out, gb, N, H)
		h.close(fmt.Sprintf("swiglu %v", sh), h.down(out), refSwiGLU(gu, N, H), 1e-6, 1e-5)
		dout, g0 := h.rnd(N*H, 1), h.rnd(N*2*H, 1)
		dg := h.up(g0)
		h.be.SwiGLUBackward(dg, h.up(dout), gb, N, H)
		h.gradCheck(fmt.Sprintf("swiglu %v", sh), [][]float64{gu}, func(in [][]float64) []float64 { return refSwiGLU(in[0], N, H) },
			dout, [][]float64{sub(h.down(dg), g0)}, gradAtol, gradRtol)
	}
}

func testAddScale(h *harness) {
	for _, n := range []int{1, 33, 20000} {
		a, b := h.rnd(n, 1), h.rnd(n, 1)
		want := make([]float64, n)
		for i := range want {
			want[i] = float64(float32(a[i]) + float32(b[i]))
		}
		ab := h.up(a)
		h.be.Add(ab, ab, h.up(b), n) // out aliasing an input is allowed
		h.close(fmt.Sprintf("add n=%d", n), h.down(ab), want, 0, 0)
		h.be.Scale(ab, n, 0.5)
		for i := range want {
			want[i] *= 0.5
		}
		h.close(fmt.Sprintf("scale n=%d", n), h.down(ab), want, 0, 0)
	}
}

func testSoftmax(h *harness) {
	for _, sh := range [][2]int{{1, 1}, {3, 7}, {5, 300}, {2, 50257}} {
		N, V := sh[0], sh[1]
		x := h.rnd(N*V, 8)
		for _, temp := range []float64{1, 0.7} {
			out := h.be.Alloc(N * V)
			h.be.Softmax(out, h.up(x), N, V, float32(temp))
			h.close(fmt.Sprintf("softmax %v T=%g", sh, temp), h.down(out), refSoftmax(x, N, V, temp), 1e-7, 1e-5)
		}
		out := h.be.Alloc(N * V)
		h.be.LogSoftmax(out, h.up(x), N, V)
		h.close(fmt.Sprintf("logsoftmax %v", sh), h.down(out), refLogSoftmax(x, N, V, 1), 1e-5, 1e-5)
		if V > 300 {
			continue
		}
		dout, g0 := h.rnd(N*V, 1), h.rnd(N*V, 1)
		dx := h.up(g0)
		h.be.LogSoftmaxBackward(dx, h.up(dout), out, N, V)
		h.gradCheck(fmt.Sprintf("logsoftmax %v", sh), [][]float64{x}, func(in [][]float64) []float64 { return refLogSoftmax(in[0], N, V, 1) },
			dout, [][]float64{sub(h.down(dx), g0)}, gradAtol, gradRtol)
		const temp = 0.7
		sm := h.be.Alloc(N * V)
		h.be.Softmax(sm, h.up(x), N, V, temp)
		dx = h.up(g0)
		h.be.SoftmaxBackward(dx, h.up(dout), sm, N, V, temp)
		h.gradCheck(fmt.Sprintf("softmax %v", sh), [][]float64{x}, func(in [][]float64) []float64 { return refSoftmax(in[0], N, V, temp) },
			dout, [][]float64{sub(h.down(dx), g0)}, gradAtol, gradRtol)
	}
}

func testTokenLogProbs(h *harness) {
	for _, sh := range [][2]int{{1, 1}, {3, 7}, {9, 300}, {2, 50257}} {
		N, V := sh[0], sh[1]
		x := h.rnd(N*V, 6)
		tg := h.ids(N, V)
		lp, st := h.be.Alloc(N), h.be.Alloc(2*N)
		xb := h.up(x)
		h.be.TokenLogProbs(lp, st, xb, tg, N, V)
		h.close(fmt.Sprintf("token logprobs %v", sh), h.down(lp), refTokenLogProbs(x, tg, N, V), 1e-5, 1e-5)
		h.close(fmt.Sprintf("token stats %v", sh), h.down(st), refTokenStats(x, N, V), 1e-5, 1e-5)
		if V > 300 {
			continue
		}
		dlogp := h.rnd(N, 1)
		dlogp[0] = 0              // rows with weight 0 get exactly zero gradient
		dl := h.up(h.rnd(N*V, 1)) // overwritten, not accumulated
		w32 := make([]float32, N)
		for i, v := range dlogp {
			w32[i] = float32(v)
		}
		h.be.TokenLogProbsBackward(dl, xb, tg, w32, N, V)
		h.gradCheck(fmt.Sprintf("token logprobs %v", sh), [][]float64{x}, func(in [][]float64) []float64 {
			return refTokenLogProbs(in[0], tg, N, V)
		}, dlogp, [][]float64{h.down(dl)}, gradAtol, gradRtol)
	}
}

func testSumSquares(h *harness) {
	for _, n := range []int{1, 100, 100003} {
		x := h.rnd(n, 1)
		want := 0.0
		for _, v := range x {
			want += v * v
		}
		got := h.be.SumSquares(h.up(x), n)
		if math.Abs(got-want) > 1e-9*want+1e-12 {
			h.t.Fatalf("sumsquares n=%d = %v, want %v", n, got, want)
		}
	}
}

func testAdamW(h *harness) {
	n := 1001
	p, g := h.rnd(n, 1), h.rnd(n, 1)
	m, v := make([]float64, n), make([]float64, n)
	hp := gpu.AdamWParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, GradScale: 0.5}
	pb, gb, mb, vb := h.up(p), h.up(g), h.up(m), h.up(v)
	for step := 1; step <= 3; step++ {
		hp.Step = step
		h.be.AdamW(pb, gb, mb, vb, n, hp)
		b1, b2 := float64(hp.Beta1), float64(hp.Beta2)
		for i := range p {
			gr := g[i] * float64(hp.GradScale)
			m[i] = b1*m[i] + (1-b1)*gr
			v[i] = b2*v[i] + (1-b2)*gr*gr
			mh, vh := m[i]/(1-math.Pow(b1, float64(step))), v[i]/(1-math.Pow(b2, float64(step)))
			p[i] -= float64(hp.LR) * (mh/(math.Sqrt(vh)+float64(hp.Eps)) + float64(hp.WeightDecay)*p[i])
		}
	}
	h.close("adamw params", h.down(pb), p, 1e-6, 1e-5)
	h.close("adamw m", h.down(mb), m, 1e-7, 1e-5)
	h.close("adamw v", h.down(vb), v, 1e-8, 1e-4)
}

// testDeterministic runs the ops with reductions twice and wants identical bits.
func testDeterministic(h *harness) {
	N, C, OC, V := 70, 96, 130, 11
	inp, w, dout := h.up(h.rnd(N*C, 1)), h.up(h.rnd(OC*C, 1)), h.up(h.rnd(N*OC, 1))
	ids := h.ids(N, V)
	s := gpu.AttnShape{B: 2, Tq: 35, Tk: 35, Tcap: 35, NH: 4, NKV: 2, HS: 24}
	q, k, v := h.up(h.rnd(N*C, 1)), h.up(h.rnd(N*C/2, 1)), h.up(h.rnd(N*C/2, 1))
	run := func() []float64 {
		di, dw, db := h.be.Alloc(N*C), h.be.Alloc(OC*C), h.be.Alloc(OC)
		h.be.MatMulBackward(di, dw, db, dout, inp, w, N, C, OC)
		dte := h.be.Alloc(V * C)
		h.be.EmbeddingBackward(dte, nil, inp, ids, nil, N, C)
		out, att := h.be.Alloc(N*C), h.be.Alloc(2*4*35*35)
		h.be.AttentionForward(out, att, q, k, v, s)
		dq, dk, dv := h.be.Alloc(N*C), h.be.Alloc(N*C/2), h.be.Alloc(N*C/2)
		h.be.AttentionBackward(dq, dk, dv, inp, att, q, k, v, s)
		var all []float64
		for _, b := range []gpu.Buffer{di, dw, db, dte, out, dq, dk, dv} {
			all = append(all, h.down(b)...)
		}
		return all
	}
	a, b := run(), run()
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			h.t.Fatalf("value %d differs between identical runs: %v vs %v", i, a[i], b[i])
		}
	}
}
