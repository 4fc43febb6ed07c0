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

// testBF16Backward: while a parameter buffer is frozen for bfloat16
// compute, a MatMulBackward over a weight in it (mixed-precision
// training's) adds to dinp and dw the float32 backward of dout, the weight
// and inp all rounded to bfloat16 (within the float32 tolerance of the
// float64 products of the rounded operands, so a backward that left any
// of the three unrounded is caught), sums dout unrounded into dbias, and
// leaves the caller's dout and inp as they were; released, it is the
// float32 backward again.
func testBF16Backward(h *harness) {
	f, ok := h.be.(gpu.BF16Compute)
	if !ok {
		h.t.Skipf("%s has no bfloat16 matmuls", h.be.Name())
	}
	for _, sh := range [][3]int{{1, 1, 1}, {3, 7, 5}, {13, 17, 31}, {70, 96, 130}, {65, 300, 5}} {
		N, C, OC := sh[0], sh[1], sh[2]
		const off = 3
		params := h.rnd(off+OC*C, 1)
		w := params[off:]
		inp, dout := h.rnd(N*C, 1), h.rnd(N*OC, 1)
		dinp0, dw0, db0 := h.rnd(N*C, 1), h.rnd(OC*C, 1), h.rnd(OC, 1)
		pb := h.up(params)
		wb := pb.Slice(off, OC*C)
		for _, frozen := range []bool{true, false} {
			name := fmt.Sprintf("bf16 backward N=%d C=%d OC=%d frozen=%v", N, C, OC, frozen)
			in, d := h.up(inp), h.up(dout)
			dinp, dw, db := h.up(dinp0), h.up(dw0), h.up(db0)
			rd, rx, rw := dout, inp, w
			if frozen {
				release := f.FreezeWeightsBF16Compute(pb)
				h.be.MatMulBackward(dinp, dw, db, d, in, wb, N, C, OC)
				release()
				rd, rx, rw = roundBF16(dout), roundBF16(inp), roundBF16(w)
			} else {
				h.be.MatMulBackward(dinp, dw, db, d, in, wb, N, C, OC)
			}
			wantIn, wantW, _ := refMatMulBackward(rd, rx, rw, N, C, OC)
			_, _, wantB := refMatMulBackward(dout, inp, w, N, C, OC)
			plus := func(a, b []float64) []float64 {
				out := make([]float64, len(a))
				for i := range a {
					out[i] = a[i] + b[i]
				}
				return out
			}
			h.close(name+": dinp", h.down(dinp), plus(dinp0, wantIn), 1e-4, 1e-5)
			h.close(name+": dw", h.down(dw), plus(dw0, wantW), 1e-4, 1e-5)
			h.close(name+": dbias", h.down(db), plus(db0, wantB), 1e-4, 1e-5)
			if !equalBits(h.down(in), inp) || !equalBits(h.down(d), dout) {
				h.t.Fatalf("%s: the backward rounded its caller's inp or dout in place", name)
			}
		}
	}
}

// testHalfKV: a binary16 key/value cache (gpu.HalfKV). StoreHalf rounds
// each stored row to binary16 as internal/narrow does, bit for bit
// (ties to even, overflow to infinity, subnormals), writes head h at its
// head-major place, leaves rows at -1 out, and leaves the stored source
// rows holding the rounded values; AttentionForwardHalf over the cache
// has the bits of AttentionForward over float32 rows holding the same
// values, on this backend, with rows of different lengths.
func testHalfKV(h *harness) {
	hk, ok := h.be.(gpu.HalfKV)
	if !ok {
		h.t.Skipf("%s has no binary16 cache", h.be.Name())
	}
	const B, NKV, NH, HS, Tcap = 3, 2, 4, 8, 6
	w := NKV * HS
	slab := NKV * Tcap * HS
	// Every position of every slot, one row each, in a shuffled order,
	// and one row left out.
	var at []int
	var rows [][2]int
	for b := 0; b < B; b++ {
		for t := 0; t < Tcap; t++ {
			rows = append(rows, [2]int{b, t})
		}
	}
	h.r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	for _, bt := range rows {
		at = append(at, bt[0]*slab+bt[1]*HS)
	}
	at = append(at, -1)
	src := h.rnd(len(at)*w, 2)
	special := []float64{65520, -65504, 1.0 / (1 << 25), 3.0 / (1 << 25), 1e-7, 1 + 1.0/2048, 1 + 3.0/2048}
	copy(src, special) // overflow, the largest value, subnormals and ties, in the first stored row
	sb := h.up(src)
	cache := h.be.Alloc(B * slab / 2)
	hk.StoreHalf(cache, at, sb, NKV, HS, Tcap)
	halves := func(b gpu.Buffer) []uint16 {
		x := h.down(b)
		out := make([]uint16, 2*len(x))
		for i, v := range x {
			u := math.Float32bits(float32(v))
			out[2*i], out[2*i+1] = uint16(u), uint16(u>>16)
		}
		return out
	}
	got := halves(cache)
	back := h.down(sb)
	for i, o := range at {
		for j := 0; j < w; j++ {
			x := float32(src[i*w+j])
			if o < 0 {
				if back[i*w+j] != float64(x) {
					h.t.Fatalf("row %d, left out, was changed", i)
				}
				continue
			}
			want := narrow.F16(x)
			hd, e := j/HS, j%HS
			if g := got[o+hd*Tcap*HS+e]; g != want {
				h.t.Fatalf("row %d element %d (%v): stored %#04x, want %#04x", i, j, x, g, want)
			}
			if r := float32(back[i*w+j]); math.Float32bits(r) != math.Float32bits(narrow.FromF16(want)) {
				h.t.Fatalf("row %d element %d: the source holds %v after the store, want the rounded %v", i, j, r, narrow.FromF16(want))
			}
		}
	}
	// Attention over the cache (finite values now: the special row's
	// infinity replaced first) and over float32 rows of its values.
	src[0] = 0.5
	sb = h.up(src)
	kc, vc := h.be.Alloc(B*slab/2), h.be.Alloc(B*slab/2)
	vsrc := h.rnd(len(at)*w, 1)
	vb := h.up(vsrc)
	hk.StoreHalf(kc, at, sb, NKV, HS, Tcap)
	hk.StoreHalf(vc, at, vb, NKV, HS, Tcap)
	kr, vr := h.down(sb), h.down(vb) // the rounded rows
	kf, vf := make([]float64, B*Tcap*w), make([]float64, B*Tcap*w)
	for i, bt := range rows {
		copy(kf[(bt[0]*Tcap+bt[1])*w:][:w], kr[i*w:][:w])
		copy(vf[(bt[0]*Tcap+bt[1])*w:][:w], vr[i*w:][:w])
	}
	s := gpu.AttnShape{B: B, Tq: 1, Tk: Tcap, Tcap: Tcap, NH: NH, NKV: NKV, HS: HS, KLen: []int32{Tcap, 2, 4}}
	q := h.up(h.rnd(B*NH*HS, 1))
	o1, a1 := h.be.Alloc(B*NH*HS), h.be.Alloc(B*NH*Tcap)
	o2, a2 := h.be.Alloc(B*NH*HS), h.be.Alloc(B*NH*Tcap)
	hk.AttentionForwardHalf(o1, a1, q, kc, vc, s)
	h.be.AttentionForward(o2, a2, q, h.up(kf), h.up(vf), s)
	if g, want := h.down(o1), h.down(o2); !equalBits(g, want) {
		h.close("half-cache attention", g, want, 0, 0)
		h.t.Fatal("half-cache attention: not the bits of float32 attention over the same values")
	}
}
