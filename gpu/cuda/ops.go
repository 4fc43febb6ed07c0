package cuda

import (
	"math"

	"github.com/corl-project/corl/gpu"
)

// EmbeddingForward implements gpu.Backend.
func (be *Backend) EmbeddingForward(out, wte, wpe gpu.Buffer, ids, pos []int32, N, C int) {
	di, fi := be.ints(ids)
	defer fi()
	var dp uint64
	if wpe != nil {
		var fp func()
		dp, fp = be.ints(pos)
		defer fp()
	}
	be.run("embedding_forward", grid(N), dptr(out), dptr(wte), dptr(wpe), di, dp, i32(N), i32(C))
}

// EmbeddingBackward implements gpu.Backend.
func (be *Backend) EmbeddingBackward(dwte, dwpe, dout gpu.Buffer, ids, pos []int32, N, C int) {
	scatter := func(dst gpu.Buffer, keys []int32) {
		order, starts, uniq := groups(keys[:N])
		o, f1 := be.ints(order)
		s, f2 := be.ints(starts)
		k, f3 := be.ints(uniq)
		be.run("embedding_backward", grid(len(uniq)), dptr(dst), dptr(dout), o, s, k, i32(C))
		f1()
		f2()
		f3()
	}
	if dwte != nil {
		scatter(dwte, ids)
	}
	if dwpe != nil {
		scatter(dwpe, pos)
	}
}

func (be *Backend) gemm(c, a, b uint64, M, N, K, lda, ldb, ldc int, transA, transB, acc bool) {
	flag := func(v bool) uint64 {
		if v {
			return 1
		}
		return 0
	}
	if M == 0 || N == 0 {
		return
	}
	if be.blas != nil {
		be.blasGemm(c, a, b, M, N, K, lda, ldb, ldc, transA, transB, acc)
		return
	}
	g := [3]uint32{uint32((N + 63) / 64), uint32((M + 63) / 64), 1}
	be.launch(be.fn["gemm"], g, block, 0, c, a, b, i32(M), i32(N), i32(K), i32(lda), i32(ldb), i32(ldc), flag(transA), flag(transB), flag(acc))
}

// MatMulForward implements gpu.Backend; over a weight frozen as bfloat16
// (FreezeWeightsBF16) it reads the weight's bfloat16 copy.
func (be *Backend) MatMulForward(out, inp, w, bias gpu.Buffer, N, C, OC int) {
	if bf, act := be.frozenBF16(w); bf != 0 {
		be.matMulBF16(out, inp, bf, act, N, C, OC)
	} else {
		be.gemm(dptr(out), dptr(inp), dptr(w), N, OC, C, C, C, OC, false, true, false)
	}
	if bias != nil {
		be.run("add_bias", blocks(N*OC), dptr(out), dptr(bias), i32(N), i32(OC))
	}
}

// matMulBF16 is MatMulForward over a weight's bfloat16 copy bf; with act
// the input is rounded to bfloat16 too (a scratch copy), and the product
// goes through cublasGemmEx where cuBLAS has it.
func (be *Backend) matMulBF16(out, inp gpu.Buffer, bf uintptr, act bool, N, C, OC int) {
	if N == 0 || OC == 0 {
		return
	}
	x := dptr(inp)
	if act && be.blas != nil && be.blas.gemmEx != nil {
		xb := be.alloc(max(2*N*C, 4))
		defer be.release(xb)
		be.run("round_bf16", blocks(N*C), uint64(xb), x, uint64(N*C))
		be.blasGemmBF16(dptr(out), uint64(xb), uint64(bf), N, OC, C, C, C, OC, false, true, false)
		return
	}
	if act {
		xr := be.alloc(max(4*N*C, 4))
		defer be.release(xr)
		be.run("round_bf16_f32", blocks(N*C), uint64(xr), x, uint64(N*C))
		x = uint64(xr)
	}
	g := [3]uint32{uint32((OC + 63) / 64), uint32((N + 63) / 64), 1}
	be.launch(be.fn["gemm_bf16"], g, block, 0, dptr(out), x, uint64(bf), i32(N), i32(OC), i32(C), i32(C), i32(C), i32(OC), 0, 1, 0)
}

// MatMulBackward implements gpu.Backend; over a weight frozen for
// bfloat16 compute (FreezeWeightsBF16Compute) it is matMulBackwardBF16.
func (be *Backend) MatMulBackward(dinp, dw, dbias, dout, inp, w gpu.Buffer, N, C, OC int) {
	if bf, act := be.frozenBF16(w); bf != 0 && act && (dinp != nil || dw != nil) && N > 0 {
		be.matMulBackwardBF16(dinp, dw, dout, inp, w, bf, N, C, OC)
		dinp, dw = nil, nil
	}
	if dinp != nil {
		be.gemm(dptr(dinp), dptr(dout), dptr(w), N, C, OC, OC, C, C, false, false, true)
	}
	if dw != nil {
		be.gemm(dptr(dw), dptr(dout), dptr(inp), OC, C, N, OC, C, C, true, false, true)
	}
	if dbias != nil {
		be.run("col_sums", blocks(OC), dptr(dbias), dptr(dout), i32(N), i32(OC))
	}
}

// matMulBackwardBF16 is MatMulBackward's two products over operands
// rounded to bfloat16, summed in float32 onto the float32 gradients (the
// backward of mixed-precision training): dout and inp rounded into scratch
// copies, the weight read from the freeze's copy bf. With cublasGemmEx
// they run on the tensor cores; without it, corl's float32 GEMM over
// float32 copies holding the rounded values, the same products.
func (be *Backend) matMulBackwardBF16(dinp, dw, dout, inp, w gpu.Buffer, bf uintptr, N, C, OC int) {
	if be.blas != nil && be.blas.gemmEx != nil {
		db := be.alloc(max(2*N*OC, 4))
		defer be.release(db)
		be.run("round_bf16", blocks(N*OC), uint64(db), dptr(dout), uint64(N*OC))
		if dinp != nil {
			be.blasGemmBF16(dptr(dinp), uint64(db), uint64(bf), N, C, OC, OC, C, C, false, false, true)
		}
		if dw != nil {
			xb := be.alloc(max(2*N*C, 4))
			defer be.release(xb)
			be.run("round_bf16", blocks(N*C), uint64(xb), dptr(inp), uint64(N*C))
			be.blasGemmBF16(dptr(dw), uint64(db), uint64(xb), OC, C, N, OC, C, C, true, false, true)
		}
		return
	}
	rounded := func(x gpu.Buffer, n int) (uint64, func()) {
		r := be.alloc(max(4*n, 4))
		be.run("round_bf16_f32", blocks(n), uint64(r), dptr(x), uint64(n))
		return uint64(r), func() { be.release(r) }
	}
	dr, fd := rounded(dout, N*OC)
	defer fd()
	if dinp != nil {
		wr, fw := rounded(w, OC*C)
		be.gemm(dptr(dinp), dr, wr, N, C, OC, OC, C, C, false, false, true)
		fw()
	}
	if dw != nil {
		xr, fx := rounded(inp, N*C)
		be.gemm(dptr(dw), dr, xr, OC, C, N, OC, C, C, true, false, true)
		fx()
	}
}

// RMSNormForward implements gpu.Backend.
func (be *Backend) RMSNormForward(out, rstd, inp, w gpu.Buffer, N, C int, eps float32) {
	be.run("rmsnorm_forward", grid(N), dptr(out), dptr(rstd), dptr(inp), dptr(w), i32(N), i32(C), f32(eps))
}

// RMSNormBackward implements gpu.Backend.
func (be *Backend) RMSNormBackward(dinp, dw, dout, inp, w, rstd gpu.Buffer, N, C int) {
	be.run("rmsnorm_backward_input", grid(N), dptr(dinp), dptr(dout), dptr(inp), dptr(w), dptr(rstd), i32(N), i32(C))
	be.run("rmsnorm_backward_weight", blocks(C), dptr(dw), dptr(dout), dptr(inp), dptr(rstd), i32(N), i32(C))
}

// LayerNormForward implements gpu.Backend.
func (be *Backend) LayerNormForward(out, mean, rstd, inp, w, b gpu.Buffer, N, C int, eps float32) {
	be.run("layernorm_forward", grid(N), dptr(out), dptr(mean), dptr(rstd), dptr(inp), dptr(w), dptr(b), i32(N), i32(C), f32(eps))
}

// LayerNormBackward implements gpu.Backend.
func (be *Backend) LayerNormBackward(dinp, dw, db, dout, inp, w, mean, rstd gpu.Buffer, N, C int) {
	be.run("layernorm_backward_input", grid(N), dptr(dinp), dptr(dout), dptr(inp), dptr(w), dptr(mean), dptr(rstd), i32(N), i32(C))
	be.run("layernorm_backward_params", blocks(C), dptr(dw), dptr(db), dptr(dout), dptr(inp), dptr(mean), dptr(rstd), i32(N), i32(C))
}

func (be *Backend) rope(x gpu.Buffer, pos []int32, N, H, HS int, theta, sign float32) {
	if HS%2 != 0 {
		panic("gpu: rope needs an even head size")
	}
	p, f := be.ints(pos[:N])
	defer f()
	be.run("rope", blocks(N*H*HS/2), dptr(x), p, i32(N), i32(H), i32(HS), f32(theta), f32(sign))
}

// RoPEForward implements gpu.Backend.
func (be *Backend) RoPEForward(x gpu.Buffer, pos []int32, N, H, HS int, theta float32) {
	be.rope(x, pos, N, H, HS, theta, 1)
}

// RoPEBackward implements gpu.Backend.
func (be *Backend) RoPEBackward(dx gpu.Buffer, pos []int32, N, H, HS int, theta float32) {
	be.rope(dx, pos, N, H, HS, theta, -1)
}

func attnArgs(s gpu.AttnShape, klen uint64) []uint64 {
	return []uint64{klen, i32(s.B), i32(s.Tq), i32(s.Tk), i32(s.Tcap), i32(s.NH), i32(s.NKV), i32(s.HS)}
}

func checkAttn(s gpu.AttnShape) {
	if s.NKV <= 0 || s.NH%s.NKV != 0 || s.Tq > s.Tk || s.Tk > s.Tcap || (s.KLen != nil && len(s.KLen) != s.B) {
		panic("gpu: bad attention shape")
	}
}

// AttentionForward implements gpu.Backend.
func (be *Backend) AttentionForward(out, att, q, k, v gpu.Buffer, s gpu.AttnShape) {
	checkAttn(s)
	kl, f := be.ints(s.KLen)
	defer f()
	args := append([]uint64{dptr(out), dptr(att), dptr(q), dptr(k), dptr(v)}, attnArgs(s, kl)...)
	be.run("attention_forward", grid(s.B*s.NH*s.Tq), args...)
}

// AttentionBackward implements gpu.Backend.
func (be *Backend) AttentionBackward(dq, dk, dv, dout, att, q, k, v gpu.Buffer, s gpu.AttnShape) {
	checkAttn(s)
	kl, f := be.ints(s.KLen)
	defer f()
	ds := be.alloc(max(s.B*s.NH*s.Tq*s.Tk, 1) * 4)
	defer be.release(ds)
	a1 := append([]uint64{dptr(dq), uint64(ds), dptr(dout), dptr(att), dptr(k), dptr(v)}, attnArgs(s, kl)...)
	be.run("attention_backward_query", grid(s.B*s.NH*s.Tq), a1...)
	a2 := append([]uint64{dptr(dk), dptr(dv), uint64(ds), dptr(att), dptr(q), dptr(dout)}, attnArgs(s, kl)...)
	be.run("attention_backward_kv", grid(s.B*s.NKV*s.Tk), a2...)
}

func checkFlash(s gpu.AttnShape) {
	checkAttn(s)
	if s.HS > gpu.FlashMaxHead {
		panic("gpu: flash attention head size past gpu.FlashMaxHead")
	}
}

// flashTiles is the blocks over n queries or keys, threads a block.
func flashTiles(n int) int { return (n + threads - 1) / threads }

// FlashAttentionForward implements gpu.FlashAttention.
func (be *Backend) FlashAttentionForward(out, lse, q, k, v gpu.Buffer, s gpu.AttnShape) {
	checkFlash(s)
	kl, f := be.ints(s.KLen)
	defer f()
	args := append([]uint64{dptr(out), dptr(lse), dptr(q), dptr(k), dptr(v)}, attnArgs(s, kl)...)
	be.run("flash_attention_forward", grid(s.B*s.NH*flashTiles(s.Tq)), args...)
}

// FlashAttentionBackward implements gpu.FlashAttention.
func (be *Backend) FlashAttentionBackward(dq, dk, dv, dout, out, lse, q, k, v gpu.Buffer, s gpu.AttnShape) {
	checkFlash(s)
	kl, f := be.ints(s.KLen)
	defer f()
	delta := be.alloc(max(s.B*s.NH*s.Tq, 1) * 4) // dout . out per query, for the second step
	defer be.release(delta)
	a1 := append([]uint64{dptr(dq), uint64(delta), dptr(dout), dptr(out), dptr(lse), dptr(q), dptr(k), dptr(v)}, attnArgs(s, kl)...)
	be.run("flash_attention_backward_query", grid(s.B*s.NH*flashTiles(s.Tq)), a1...)
	a2 := append([]uint64{dptr(dk), dptr(dv), dptr(dout), dptr(lse), uint64(delta), dptr(q), dptr(k), dptr(v)}, attnArgs(s, kl)...)
	be.run("flash_attention_backward_kv", grid(s.B*s.NKV*flashTiles(s.Tk)), a2...)
}

// GELUForward implements gpu.Backend.
func (be *Backend) GELUForward(out, inp gpu.Buffer, n int) {
	be.run("gelu_forward", blocks(n), dptr(out), dptr(inp), i32(n))
}

// GELUBackward implements gpu.Backend.
func (be *Backend) GELUBackward(dinp, dout, inp gpu.Buffer, n int) {
	be.run("gelu_backward", blocks(n), dptr(dinp), dptr(dout), dptr(inp), i32(n))
}

// SwiGLUForward implements gpu.Backend.
func (be *Backend) SwiGLUForward(out, gateup gpu.Buffer, N, H int) {
	be.run("swiglu_forward", blocks(N*H), dptr(out), dptr(gateup), i32(N), i32(H))
}

// SwiGLUBackward implements gpu.Backend.
func (be *Backend) SwiGLUBackward(dgateup, dout, gateup gpu.Buffer, N, H int) {
	be.run("swiglu_backward", blocks(N*H), dptr(dgateup), dptr(dout), dptr(gateup), i32(N), i32(H))
}

// Add implements gpu.Backend.
func (be *Backend) Add(out, a, b gpu.Buffer, n int) {
	be.run("add", blocks(n), dptr(out), dptr(a), dptr(b), i32(n))
}

// Scale implements gpu.Backend.
func (be *Backend) Scale(x gpu.Buffer, n int, s float32) {
	be.run("scale", blocks(n), dptr(x), i32(n), f32(s))
}

// Softmax implements gpu.Backend.
func (be *Backend) Softmax(out, inp gpu.Buffer, N, V int, temperature float32) {
	be.run("softmax_forward", grid(N), dptr(out), dptr(inp), i32(N), i32(V), f32(temperature))
}

// SoftmaxBackward implements gpu.Backend.
func (be *Backend) SoftmaxBackward(dinp, dout, out gpu.Buffer, N, V int, temperature float32) {
	be.run("softmax_backward", grid(N), dptr(dinp), dptr(dout), dptr(out), i32(N), i32(V), f32(temperature))
}

// LogSoftmax implements gpu.Backend.
func (be *Backend) LogSoftmax(out, inp gpu.Buffer, N, V int) {
	be.run("logsoftmax_forward", grid(N), dptr(out), dptr(inp), i32(N), i32(V))
}

// LogSoftmaxBackward implements gpu.Backend.
func (be *Backend) LogSoftmaxBackward(dinp, dout, out gpu.Buffer, N, V int) {
	be.run("logsoftmax_backward", grid(N), dptr(dinp), dptr(dout), dptr(out), i32(N), i32(V))
}

// TokenLogProbs implements gpu.Backend.
func (be *Backend) TokenLogProbs(logp, stats, logits gpu.Buffer, targets []int32, N, V int) {
	t, f := be.ints(targets[:N])
	defer f()
	be.run("token_logprobs", grid(N), dptr(logp), dptr(stats), dptr(logits), t, i32(N), i32(V))
}

// TokenLogProbsBackward implements gpu.Backend.
func (be *Backend) TokenLogProbsBackward(dlogits, logits gpu.Buffer, targets []int32, dlogp []float32, N, V int) {
	t, f := be.ints(targets[:N])
	defer f()
	w := &Buffer{ptr: be.alloc(max(N, 1) * 4), n: N}
	defer be.release(w.ptr)
	be.Upload(w, dlogp[:N])
	be.run("token_logprobs_backward", grid(N), dptr(dlogits), dptr(logits), t, uint64(w.ptr), i32(N), i32(V))
}

const sumChunk = 1 << 14

// SumSquares implements gpu.Backend: per-chunk partials (the CPU backend's
// chunks) in double, added on the host in chunk order.
func (be *Backend) SumSquares(x gpu.Buffer, n int) float64 {
	chunks := (n + sumChunk - 1) / sumChunk
	if chunks == 0 {
		return 0
	}
	part := &Buffer{ptr: be.alloc(chunks * 8), n: 2 * chunks}
	defer be.release(part.ptr)
	be.run("sum_squares", grid(chunks), uint64(part.ptr), dptr(x), i32(n))
	raw := make([]float32, 2*chunks)
	be.Download(raw, part)
	var total float64
	for c := 0; c < chunks; c++ {
		bits := uint64(math.Float32bits(raw[2*c])) | uint64(math.Float32bits(raw[2*c+1]))<<32
		total += math.Float64frombits(bits)
	}
	return total
}

// AdamW implements gpu.Backend.
func (be *Backend) AdamW(p, g, m, v gpu.Buffer, n int, h gpu.AdamWParams) {
	bc1 := float32(1 - math.Pow(float64(h.Beta1), float64(h.Step)))
	bc2 := float32(1 - math.Pow(float64(h.Beta2), float64(h.Step)))
	be.run("adamw", blocks(n), dptr(p), dptr(g), dptr(m), dptr(v), i32(n), f32(h.LR), f32(h.Beta1), f32(h.Beta2),
		f32(h.Eps), f32(h.WeightDecay), f32(bc1), f32(bc2), f32(h.GradScale))
}

// StoreHalf implements gpu.HalfKV: store_half, one thread per element of
// the stored rows.
func (be *Backend) StoreHalf(dst gpu.Buffer, at []int, src gpu.Buffer, nkv, hs, tcap int) {
	w := nkv * hs
	if len(at)*w > src.Len() {
		panic("gpu: half store of more rows than the source holds")
	}
	offs := make([]int32, len(at))
	for i, o := range at {
		if o >= 0 && o+(nkv-1)*tcap*hs+hs > 2*dst.Len() {
			panic("gpu: half store past the cache")
		}
		if o > math.MaxInt32 {
			panic("gpu: half cache offset past 2^31 values")
		}
		offs[i] = int32(max(o, -1))
	}
	if len(at) == 0 {
		return
	}
	d, f := be.ints(offs)
	defer f()
	be.run("store_half", blocks(len(at)*w), dptr(dst), d, dptr(src), i32(len(at)), i32(nkv), i32(hs), i32(tcap))
}

// AttentionForwardHalf implements gpu.HalfKV: attention_forward_half,
// the bits of AttentionForward over float32 rows holding the cache's
// values.
func (be *Backend) AttentionForwardHalf(out, att, q, k, v gpu.Buffer, s gpu.AttnShape) {
	checkAttn(s)
	if s.Tq != 1 {
		panic("gpu: half-cache attention takes one query row")
	}
	if 2*k.Len() < s.B*s.NKV*s.Tcap*s.HS || 2*v.Len() < s.B*s.NKV*s.Tcap*s.HS {
		panic("gpu: half cache smaller than its shape")
	}
	kl, f := be.ints(s.KLen)
	defer f()
	be.run("attention_forward_half", grid(s.B*s.NH), dptr(out), dptr(att), dptr(q), dptr(k), dptr(v), kl,
		i32(s.B), i32(s.Tk), i32(s.Tcap), i32(s.NH), i32(s.NKV), i32(s.HS))
}

var _ gpu.HalfKV = (*Backend)(nil)
