package cuda

import (
	"github.com/corl-project/corl/gpu"
)

// frozen is a region of device memory whose owner promised not to write
// it (the weights during generation): with bf set, the matmuls whose
// weight lies in it read a bfloat16 copy made when it was frozen.
type frozen struct {
	lo, hi uintptr // the float32 weights' device addresses
	bf     uintptr // their bfloat16 copy (2 bytes an element); 0 for a float32 freeze
	act    bool    // the matmuls round their inputs to bfloat16 too (gpu.BF16Compute)
	holds  int     // freezes of the same region and kind holding it
}

// FreezeWeights implements gpu.WeightFreezer. The float32 weights are
// read as they are, so it only marks the region: a float32 freeze inside
// a bfloat16 one computes in float32 until it is released, as on the CPU.
func (be *Backend) FreezeWeights(w gpu.Buffer) (release func()) { return be.freeze(w, false, false) }

// FreezeWeightsBF16 implements gpu.BF16Freezer: it rounds w to a bfloat16
// copy on the device (round_bf16: to nearest, ties to even), and while it
// is held every MatMulForward whose weight lies in w runs gemm_bf16 over
// the copy: float32 activations and sums, the products gemm's on the
// widened weights, so bit for bit the float32 matmul of the rounded
// weights through corl's GEMM kernel. That kernel runs even where float32
// GEMMs go through cuBLAS, which multiplies no bfloat16 by a float32.
// Decoding a few sequences reads every weight once a token: this halves
// those bytes, and the copy costs half the weights' memory while held.
// A freeze of the same region inside one still held shares its copy.
func (be *Backend) FreezeWeightsBF16(w gpu.Buffer) (release func()) { return be.freeze(w, true, false) }

// FreezeWeightsBF16Compute implements gpu.BF16Compute: FreezeWeightsBF16,
// with each such matmul's input rounded to bfloat16 as well, into a
// scratch copy. With cuBLAS the product is cublasGemmEx over the two
// bfloat16 operands with float32 sums, on the tensor cores; without it,
// gemm_bf16 over the input rounded to bfloat16 values, which is then bit
// for bit corl's float32 GEMM of the two rounded operands.
func (be *Backend) FreezeWeightsBF16Compute(w gpu.Buffer) (release func()) {
	return be.freeze(w, true, true)
}

func (be *Backend) freeze(w gpu.Buffer, bf16, act bool) (release func()) {
	n := w.Len()
	if n == 0 {
		return func() {}
	}
	lo := uintptr(dptr(w))
	hi := lo + uintptr(n)*4
	var f *frozen
	for _, g := range be.frozen {
		if g.lo == lo && g.hi == hi && (g.bf != 0) == bf16 && g.act == act {
			f = g
			break
		}
	}
	if f == nil {
		f = &frozen{lo: lo, hi: hi, act: act}
		if bf16 {
			f.bf = be.alloc(2 * n)
			be.run("round_bf16", blocks(n), uint64(f.bf), uint64(lo), uint64(n))
		}
	}
	f.holds++
	be.frozen = append(be.frozen, f)
	return func() {
		for i := len(be.frozen) - 1; i >= 0; i-- {
			if be.frozen[i] == f {
				be.frozen = append(be.frozen[:i], be.frozen[i+1:]...)
				break
			}
		}
		if f.holds--; f.holds == 0 && f.bf != 0 {
			be.release(f.bf)
			f.bf = 0
		}
	}
}

// frozenBF16 is the address of weight w's bfloat16 copy when the newest
// frozen region holding w is a bfloat16 one (and whether that region's
// matmuls round their inputs too); 0 otherwise.
func (be *Backend) frozenBF16(w gpu.Buffer) (uintptr, bool) {
	at := uintptr(dptr(w))
	for i := len(be.frozen) - 1; i >= 0; i-- {
		f := be.frozen[i]
		if at < f.lo || at >= f.hi {
			continue
		}
		if f.bf == 0 {
			return 0, false
		}
		return f.bf + (at-f.lo)/2, f.act
	}
	return 0, false
}

var (
	_ gpu.WeightFreezer = (*Backend)(nil)
	_ gpu.BF16Freezer   = (*Backend)(nil)
	_ gpu.BF16Compute   = (*Backend)(nil)
)
