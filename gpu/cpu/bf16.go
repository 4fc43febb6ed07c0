package cpu

import "github.com/corl-project/corl/internal/narrow"

// bfloat16 weights for generation (gpu.BF16Freezer). Decoding a few
// sequences reads every weight once a token, so it runs at the speed of
// memory, not of arithmetic; rounded to bfloat16 the frozen weights are
// half the bytes. Only the weights are rounded, once, when frozen:
// activations stay float32, products are float32 FMAs on the rounded
// weights (widening a bfloat16 is exact), so a bf16 matmul is the float32
// matmul of the rounded weights, bit for bit, and as independent of the
// batch and the thread count. With AVX-512 the packed panels are bfloat16
// and the kernels widen them as they load; elsewhere the panels are
// float32 holding the rounded values.

// packBF16 stores a packed float32 B panel (kb x nr, p[k*nr+j]) as
// bfloat16 in the kernels' order: row k's dword j holds column j in its
// low half and column 16+j in its high half.
func packBF16(kb int, src []float32, dst []uint16) {
	for k := 0; k < kb; k++ {
		s, d := src[k*nr:k*nr+nr:k*nr+nr], dst[k*nr:k*nr+nr:k*nr+nr]
		for j := 0; j < nr/2; j++ {
			d[2*j], d[2*j+1] = narrow.BF16(s[j]), narrow.BF16(s[nr/2+j])
		}
	}
}

// roundedBF16 is a copy of x rounded to bfloat16 values (the input of a
// matmul over weights frozen by FreezeWeightsBF16Compute).
func (be *Backend) roundedBF16(x []float32) []float32 {
	out := make([]float32, len(x))
	be.parallelFor(len(x), 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = narrow.FromBF16(narrow.BF16(x[i]))
		}
	})
	return out
}

// roundBF16 rounds a packed float32 panel to bfloat16 values in place
// (the panels of a bf16 freeze where the kernels take float32).
func roundBF16(p []float32) {
	for i, v := range p {
		p[i] = narrow.FromBF16(narrow.BF16(v))
	}
}

// bpanels is one K block of packed B: float32 panels, or, for a weight
// frozen as bfloat16 where the kernels read it (bf16Panels), bfloat16
// ones. Its methods run the micro-kernels on panel jp onwards, over kb
// rows of each panel; a panel starts ps values after the one before
// (nr*kb, unless the kernels run a part of a deeper block: causalPack).
type bpanels struct {
	f  []float32
	h  []uint16
	kb int
	ps int
}

// blockPanels is a whole packed K block of kb rows.
func blockPanels(f []float32, h []uint16, kb int) bpanels {
	return bpanels{f: f, h: h, kb: kb, ps: nr * kb}
}

// tile is kern12x32 on panel jp.
func (p bpanels) tile(jp int, a, c []float32, ldc int, set bool) {
	o, n := jp*p.ps, nr*p.kb
	if p.h != nil {
		kern12x32H(p.kb, a, p.h[o:o+n], c, ldc, set)
		return
	}
	kern12x32(p.kb, a, p.f[o:o+n], c, ldc, set)
}

// edge is kernEdge on panel jp, of nw real columns.
func (p bpanels) edge(jp, mh, nw int, a []float32, tile *[mr * nr]float32) {
	o, n := jp*p.ps, nr*p.kb
	if p.h != nil {
		kernEdgeH(p.kb, mh, a, p.h[o:o+n], tile)
		return
	}
	kernEdge(p.kb, mh, nw, a, p.f[o:o+n], tile)
}

// narrow is kernNarrow on panel jp, of nw real columns, where there is
// one for float32 panels.
func (p bpanels) narrow(jp, nw int, a, c []float32, ldc int, set bool) bool {
	o := jp * p.ps
	return p.h == nil && kernNarrow(p.kb, nw, a, p.f[o:o+nr*p.kb], c, ldc, set)
}

// row4 is kern1x128 on panels jp to jp+3.
func (p bpanels) row4(jp int, a, c []float32) {
	o, n := jp*p.ps, 3*p.ps+nr*p.kb
	if p.h != nil {
		kern1x128H(p.kb, a, p.h[o:o+n], p.ps, c)
		return
	}
	kern1x128(p.kb, a, p.f[o:o+n], p.ps, c)
}
