package gputest

import (
	"fmt"
	"math"

	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/internal/narrow"
)

// roundBF16 is x with every value rounded to bfloat16 as the backends
// must: to nearest, ties to even (internal/narrow).
func roundBF16(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(narrow.FromBF16(narrow.BF16(float32(v))))
	}
	return out
}

// testBF16Weights: while a parameter buffer is frozen as bfloat16
// (gpu.BF16Freezer), a matmul whose weight lies in it is the float32
// matmul of the weight rounded to bfloat16, to nearest with ties to even:
// within the float32 matmul's tolerance of the float64 product of the
// rounded weights, on weights at an offset into the buffer, with and
// without bias. A one-hot input row reads single rounded weights, and
// weights placed exactly halfway between two bfloat16 values tell ties to
// even from ties away or truncation exactly. A float32 freeze inside the
// bfloat16 one computes in float32 until released; after the outer
// release the matmul is float32 again.
//
// The tolerance is the float32 matmul's: the rounding is exact on both
// sides (the reference rounds as the backend must), widening a bfloat16
// is exact, and only the float32 sums' order differs. A wrong rounding
// moves a weight by up to 2^-8 of itself, far past it.
func testBF16Weights(h *harness) {
	f, ok := h.be.(gpu.BF16Freezer)
	if !ok {
		h.t.Skipf("%s has no bfloat16 weights", h.be.Name())
	}
	for _, sh := range [][3]int{{1, 1, 1}, {3, 7, 5}, {13, 17, 31}, {70, 96, 130}, {5, 300, 65}} {
		N, C, OC := sh[0], sh[1], sh[2]
		const off = 3 // the weight starts inside the frozen buffer
		params := h.rnd(off+OC*C+5, 1)
		// Ties: 1 + 2^-8 rounds to 1 (even), 1 + 3 x 2^-8 to 1 + 2^-6
		// (even); away from zero or truncated, the first goes up or the
		// second down.
		params[off] = 1 + 1.0/256
		if OC*C > 1 {
			params[off+1] = -(1 + 3.0/256)
		}
		w := params[off : off+OC*C]
		inp := h.rnd(N*C, 1)
		for c := 0; c < C; c++ {
			inp[c] = 0
		}
		inp[0] = 1 // row 0 reads column 0 of each weight row exactly
		bias := h.rnd(OC, 1)
		pb := h.up(params)
		wb := pb.Slice(off, OC*C)
		for _, b := range [][]float64{nil, bias} {
			name := fmt.Sprintf("bf16 weights N=%d C=%d OC=%d bias=%v", N, C, OC, b != nil)
			release := f.FreezeWeightsBF16(pb)
			out := h.be.Alloc(N * OC)
			h.be.MatMulForward(out, h.up(inp), wb, h.up(b), N, C, OC)
			got := h.down(out)
			h.close(name, got, refMatMul(inp, roundBF16(w), b, N, C, OC), 1e-4, 1e-5)
			for o := 0; o < OC; o++ {
				want := float64(narrow.FromBF16(narrow.BF16(float32(w[o*C]))))
				if b != nil {
					want = float64(float32(want) + float32(b[o]))
				}
				if got[o] != want {
					h.t.Fatalf("%s: one-hot row, output %d = %.9g, want the rounded weight %.9g", name, o, got[o], want)
				}
			}
			if fz, ok := h.be.(gpu.WeightFreezer); ok {
				inner := fz.FreezeWeights(pb)
				h.be.MatMulForward(out, h.up(inp), wb, h.up(b), N, C, OC)
				h.close(name+", float32 freeze inside", h.down(out), refMatMul(inp, w, b, N, C, OC), 1e-4, 1e-5)
				inner()
				h.be.MatMulForward(out, h.up(inp), wb, h.up(b), N, C, OC)
				if g := h.down(out); !equalBits(g, got) {
					h.t.Fatalf("%s: after the inner float32 freeze's release, not the bfloat16 matmul again", name)
				}
			}
			release()
			h.be.MatMulForward(out, h.up(inp), wb, h.up(b), N, C, OC)
			g := h.down(out)
			h.close(name+", released", g, refMatMul(inp, w, b, N, C, OC), 1e-4, 1e-5)
			if OC*C > 1 && g[0] == got[0] && math.Abs(w[0]-float64(narrow.FromBF16(narrow.BF16(float32(w[0]))))) > 0 {
				h.t.Fatalf("%s: released, the matmul still reads the rounded weight", name)
			}
		}
	}
}

// equalBits says whether a and b hold the same float32 values.
func equalBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(float32(a[i])) != math.Float32bits(float32(b[i])) {
			return false
		}
	}
	return true
}

// testBF16Compute: while a parameter buffer is frozen for matmuls wholly
// in bfloat16 (gpu.BF16Compute), a matmul over a weight in it is the
// float32 matmul of the input and the weight both rounded to bfloat16:
// within the float32 matmul's tolerance of the float64 product of the two
// rounded operands (their products are exact; only the sums' order
// differs, on a GPU's tensor cores as here), exact on one-hot rows, an
// input placed at a tie rounding to even, and the caller's input left as
// it was. Released, the matmul is float32 again.
func testBF16Compute(h *harness) {
	f, ok := h.be.(gpu.BF16Compute)
	if !ok {
		h.t.Skipf("%s has no bfloat16 matmuls", h.be.Name())
	}
	for _, sh := range [][3]int{{1, 1, 1}, {3, 7, 5}, {13, 17, 31}, {70, 96, 130}, {5, 300, 65}} {
		N, C, OC := sh[0], sh[1], sh[2]
		const off = 5
		params := h.rnd(off+OC*C, 1)
		w := params[off:]
		inp := h.rnd(N*C, 1)
		for c := 0; c < C; c++ {
			inp[c] = 0
		}
		inp[0] = 1 + 1.0/256 // a tie: rounds to 1, so row 0 reads the rounded weights' first column exactly
		bias := h.rnd(OC, 1)
		pb := h.up(params)
		wb := pb.Slice(off, OC*C)
		for _, b := range [][]float64{nil, bias} {
			name := fmt.Sprintf("bf16 matmuls N=%d C=%d OC=%d bias=%v", N, C, OC, b != nil)
			in := h.up(inp)
			release := f.FreezeWeightsBF16Compute(pb)
			out := h.be.Alloc(N * OC)
			h.be.MatMulForward(out, in, wb, h.up(b), N, C, OC)
			got := h.down(out)
			h.close(name, got, refMatMul(roundBF16(inp), roundBF16(w), b, N, C, OC), 1e-4, 1e-5)
			for o := 0; o < OC; o++ {
				want := float64(narrow.FromBF16(narrow.BF16(float32(w[o*C]))))
				if b != nil {
					want = float64(float32(want) + float32(b[o]))
				}
				if got[o] != want {
					h.t.Fatalf("%s: one-hot row at a tie, output %d = %.9g, want the rounded weight %.9g", name, o, got[o], want)
				}
			}
			if x := h.down(in); !equalBits(x, inp) {
				h.t.Fatalf("%s: the matmul rounded its caller's input in place", name)
			}
			release()
			h.be.MatMulForward(out, in, wb, h.up(b), N, C, OC)
			h.close(name+", released", h.down(out), refMatMul(inp, w, b, N, C, OC), 1e-4, 1e-5)
		}
	}
}
