package gpu

// Buffer is a handle to device memory holding float32 values.
type Buffer interface {
	// Len is the number of float32 elements.
	Len() int
	// Slice returns a view of n elements starting at off, sharing memory.
	Slice(off, n int) Buffer
}

// AttnShape describes one causal attention call. Queries are the last Tq positions
// of a sequence whose keys and values occupy positions [0, Tk) of a cache with
// room for Tcap positions per batch row; training uses Tq == Tk == Tcap.
// KLen, when set, gives each row its own key count (KLen[b] <= Tk): rows of a
// decoding batch sit at different positions; att entries past KLen[b] are 0.
//
//	q, out (B, Tq, NH*HS)    k, v (B, Tcap, NKV*HS)    att (B, NH, Tq, Tk)
type AttnShape struct {
	B, Tq, Tk, Tcap, NH, NKV, HS int
	KLen                         []int32
}

// Keys returns the number of keys row b attends over.
func (s AttnShape) Keys(b int) int {
	if s.KLen != nil {
		return int(s.KLen[b])
	}
	return s.Tk
}

// Backend is a compute device. Operations are issued in program order; results of
// Download reflect every operation issued before it.
type Backend interface {
	Name() string
	// Threads is the degree of parallelism (CPU cores or 1 for a GPU stream).
	Threads() int

	Alloc(n int) Buffer // zero-filled
	Free(b Buffer)
	Upload(dst Buffer, src []float32)
	Download(dst []float32, src Buffer)
	Zero(b Buffer)
	Copy(dst, src Buffer)
	// Sync waits for all issued work and reports an asynchronous device error.
	Sync() error

	// Embedding: out (N, C) = wte[ids] (+ wpe[pos] when wpe is non-nil).
	// ids, pos (N) in host memory; wte (V, C); wpe (maxT, C).
	EmbeddingForward(out, wte, wpe Buffer, ids, pos []int32, N, C int)
	// dwte (V, C) += scatter of dout; dwpe (maxT, C) += scatter by position (nil skips).
	EmbeddingBackward(dwte, dwpe, dout Buffer, ids, pos []int32, N, C int)

	// MatMul: out (N, OC) = inp (N, C) @ w(OC, C)^T + bias (OC; nil for none).
	MatMulForward(out, inp, w, bias Buffer, N, C, OC int)
	// dinp (N, C) += dout @ w; dw (OC, C) += dout^T @ inp; dbias (OC) += colsum(dout).
	// dinp, dw or dbias may be nil to skip that gradient.
	MatMulBackward(dinp, dw, dbias, dout, inp, w Buffer, N, C, OC int)

	// RMSNorm: out (N, C) = inp * rstd * w; rstd (N) saved for backward.
	RMSNormForward(out, rstd, inp, w Buffer, N, C int, eps float32)
	RMSNormBackward(dinp, dw, dout, inp, w, rstd Buffer, N, C int)
	// LayerNorm: out (N, C) = (inp - mean) * rstd * w + b; mean, rstd (N) saved.
	LayerNormForward(out, mean, rstd, inp, w, b Buffer, N, C int, eps float32)
	LayerNormBackward(dinp, dw, db, dout, inp, w, mean, rstd Buffer, N, C int)

	// RoPE rotates x (N, H, HS) in place, token i at position pos[i] (half-split
	// pairs (j, j+HS/2), as in Llama/Qwen2 on Hugging Face). Backward rotates
	// the gradient in place by the opposite angle.
	RoPEForward(x Buffer, pos []int32, N, H, HS int, theta float32)
	RoPEBackward(dx Buffer, pos []int32, N, H, HS int, theta float32)

	// Attention: causal scaled dot-product attention with grouped-query heads
	// (query head h reads key/value head h / (NH/NKV)); att saves probabilities.
	AttentionForward(out, att, q, k, v Buffer, s AttnShape)
	// dq, dk, dv += gradients (dk, dv sized like k, v).
	AttentionBackward(dq, dk, dv, dout, att, q, k, v Buffer, s AttnShape)

	// GELU (tanh approximation): out = gelu(inp), n elements.
	GELUForward(out, inp Buffer, n int)
	GELUBackward(dinp, dout, inp Buffer, n int)
	// SwiGLU: out (N, H) = silu(gate) * up, with gateup (N, 2H) = [gate | up].
	SwiGLUForward(out, gateup Buffer, N, H int)
	SwiGLUBackward(dgateup, dout, gateup Buffer, N, H int)

	// Add: out = a + b (n elements; out may alias a or b).
	Add(out, a, b Buffer, n int)
	// Scale: x *= s.
	Scale(x Buffer, n int, s float32)

	// Softmax over rows: out (N, V) = softmax(inp / temperature).
	Softmax(out, inp Buffer, N, V int, temperature float32)
	// SoftmaxBackward: dinp (N, V) += out*(dout - sum(dout*out))/temperature,
	// where out is Softmax's result.
	SoftmaxBackward(dinp, dout, out Buffer, N, V int, temperature float32)
	// LogSoftmax over rows: out (N, V) = log_softmax(inp).
	LogSoftmax(out, inp Buffer, N, V int)
	// LogSoftmaxBackward: dinp (N, V) += dout - exp(out)*sum(dout), where out
	// is LogSoftmax's result.
	LogSoftmaxBackward(dinp, dout, out Buffer, N, V int)
	// TokenLogProbs: logp (N) = log_softmax(logits (N, V))[targets]; when stats is
	// non-nil it receives, per row, the entropy H(p) and KL(U || p) (stats (N, 2)).
	TokenLogProbs(logp, stats, logits Buffer, targets []int32, N, V int)
	// TokenLogProbsBackward: dlogits (N, V) = dlogp[i] * (onehot(target) - softmax)
	// (overwrites dlogits: logits feed nothing else). dlogp (N) is a host slice of
	// per-token loss weights (dLoss/dlogp); rows with weight 0 get zero gradient.
	TokenLogProbsBackward(dlogits, logits Buffer, targets []int32, dlogp []float32, N, V int)

	// SumSquares returns the sum of squares of x (float64 accumulation in
	// fixed-size chunks combined in order, so it is thread-count independent).
	SumSquares(x Buffer, n int) float64
	// AdamW updates p in place with decoupled weight decay:
	// m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2; p -= lr*(mhat/(sqrt(vhat)+eps) + wd*p)
	// with mhat = m/(1-b1^t), vhat = v/(1-b2^t); g = grad*gradScale.
	AdamW(p, g, m, v Buffer, n int, h AdamWParams)
}

// ScaledRoPE is implemented by backends that rotate by given inverse
// frequencies (a model with rope_scaling), invFreq (HS/2) instead of
// theta^(-2i/HS).
type ScaledRoPE interface {
	RoPEForwardFreq(x Buffer, pos []int32, N, H, HS int, invFreq []float32)
	RoPEBackwardFreq(dx Buffer, pos []int32, N, H, HS int, invFreq []float32)
}

// WeightFreezer is implemented by backends that can prepare weights for
// repeated use while their owner promises not to write them (generation
// reads the same weights for every token; the CPU backend packs its GEMM
// panels once). Results must be bitwise those without freezing.
type WeightFreezer interface {
	// FreezeWeights promises that w is not written until release is called.
	FreezeWeights(w Buffer) (release func())
}

// BF16Freezer is implemented by backends that can also freeze weights for
// generation in bfloat16: every matmul whose weight lies in w computes
// over the weight rounded to bfloat16 (nearest, ties to even) with
// float32 activations and sums, bitwise as the float32 matmul of the
// rounded weight, so still independent of the batch and the threads.
// Decoding a few sequences is bound by reading the weights; this halves
// the bytes, for a relative error up to 2^-9 in each weight.
type BF16Freezer interface {
	FreezeWeightsBF16(w Buffer) (release func())
}

// BF16Compute is implemented by backends that can freeze weights for
// generation with the matmuls wholly in bfloat16: every matmul whose
// weight lies in w multiplies the weight and its input, both rounded to
// bfloat16 (nearest, ties to even), summing in float32, which is what
// tensor cores do with bfloat16 operands. A product of two bfloat16
// values is exact in float32, so a result is the float32 matmul of the two
// rounded operands but for the order of its sums (which the backend keeps
// fixed: results still do not depend on the batch). Batched decoding and
// prefill are bound by arithmetic, not by reading the weights; this lets a
// GPU run them on its tensor cores, for a relative error up to 2^-9 in
// each input as well as each weight.
//
// The same freeze serves training with mixed precision (float32 master
// weights, gradients and optimizer; bfloat16 operands): while it is held a
// MatMulBackward over a weight in w computes dinp += dout w and
// dw += dout^T inp from dout, the weight and inp all rounded to bfloat16,
// summing in float32 and adding to the float32 gradients; dbias sums dout
// as it is. The caller's dout and inp are left as they were, and w must
// not be written while held (an optimizer step comes after the release,
// and the next freeze rounds the stepped masters again).
type BF16Compute interface {
	FreezeWeightsBF16Compute(w Buffer) (release func())
}

// Splitter is implemented by backends whose threads do better on separate
// parts of a batch than together on each small operation (the CPU backend:
// decoding a small model issues many operations too short to share).
// Split returns n one-thread backends over the same memory and frozen
// weights; each may run concurrently with the others, not with the
// original. Rows must compute bitwise as on the whole backend.
type Splitter interface {
	Split(n int) []Backend
}

// RowScatterer is implemented by backends that copy many short rows in one
// call (a decoding step's new key and value rows, one per slot, each to its
// own place in the cache) cheaper than one Copy a row.
type RowScatterer interface {
	// ScatterRows copies src's row i (width floats) to dst from offset
	// at[i]; a negative at[i] leaves row i out.
	ScatterRows(dst Buffer, at []int, src Buffer, width int)
}

// HalfKV is implemented by backends that can keep a decoding key/value
// cache in IEEE binary16: half the bytes of float32, and decoding attention
// is bound by reading the cache (every step reads every slot's keys and
// values once). A half cache buffer holds two binary16 values per float32
// element, head-major: slot b's key/value head h at position t starts at
// value ((b*NKV+h)*Tcap+t)*HS. Attention over it has the bits of
// AttentionForward over float32 keys and values equal to the stored ones.
type HalfKV interface {
	// StoreHalf rounds row i of src (NKV*HS floats) to binary16 (nearest,
	// ties to even) and writes head h of it at value at[i]+h*Tcap*HS of
	// dst; a negative at[i] leaves row i out. Each stored row of src is
	// left holding the rounded values, so float32 attention over src (a
	// prefill's) sees what the cache holds.
	StoreHalf(dst Buffer, at []int, src Buffer, nkv, hs, tcap int)
	// AttentionForwardHalf is AttentionForward with Tq == 1 over a half
	// cache: k and v hold s.B slots of s.NKV heads of s.Tcap positions.
	AttentionForwardHalf(out, att, q, k, v Buffer, s AttnShape)
}

// AdamWParams are the hyper-parameters of one AdamW step.
type AdamWParams struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	Step                               int     // 1-based step count, for bias correction
	GradScale                          float32 // multiplies gradients first (clipping)
}

// FlashAttention is implemented by backends that compute attention in tiles
// with an online softmax (FlashAttention-2's algorithm): the probabilities
// are never stored, so memory is O(T) per head, not AttentionForward's
// O(T^2). lse (B, NH, Tq) saves each query's log-sum-exp of its scaled
// scores; the backward recomputes the probabilities from it. Head sizes up
// to FlashMaxHead.
type FlashAttention interface {
	FlashAttentionForward(out, lse, q, k, v Buffer, s AttnShape)
	// dq, dk, dv += gradients; out and lse are the forward's.
	FlashAttentionBackward(dq, dk, dv, dout, out, lse, q, k, v Buffer, s AttnShape)
}

// FlashMaxHead is the largest head size FlashAttention takes.
const FlashMaxHead = 128

// MemoryReporter is implemented by backends that know how much memory they
// have: the bytes free now and in all (a CPU backend: the host's available
// and total memory).
type MemoryReporter interface {
	Memory() (free, total int64, err error)
}
