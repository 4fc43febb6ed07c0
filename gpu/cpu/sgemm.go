package cpu

// Blocked, packed single-precision GEMM after Goto and van de Geijn: B is packed
// into kc x nr panels that stay in L1 while a kc x mc block of packed A streams
// from L2 through the 12x32 micro-kernel. Work is split over (A block, B panel
// range) items; every C tile is computed by one goroutine, and K blocks are
// added to C in increasing order, so the result does not depend on the split.

const (
	mr = 12   // micro-tile rows (A panel height)
	nr = 32   // micro-tile columns (two 16-float vectors)
	kc = 256  // K block
	mc = 144  // A block rows (multiple of mr)
	nc = 4096 // B block columns (multiple of nr)
)

// kernelName names the micro-kernel in use, for Name and benchmarks.
var kernelName = "go"

// gemmScratch holds per-worker packed-A buffers and one packed-B buffer.
type gemmScratch struct {
	a [][]float32
	b []float32
	// rows is attention backward's (Tq, Tk) score gradient, kept for the
	// next call instead of allocated per call.
	rows []float32
	// packs hold attention's operands packed for its causal strips.
	packs [4][]float32
}

func newGemmScratch(threads int) *gemmScratch {
	s := &gemmScratch{a: make([][]float32, threads)}
	for i := range s.a {
		s.a[i] = make([]float32, ownBlocks*mc*kc)
	}
	return s
}

// packedB returns the packed-B buffer, grown to hold a kc x n block.
func (s *gemmScratch) packedB(n int) []float32 {
	need := kc * min(nc, (n+nr-1)/nr*nr)
	if len(s.b) < need {
		s.b = make([]float32, need)
	}
	return s.b
}

// gemm computes c (M x N, row stride ldc) = or += op(a) (M x K) @ op(b) (K x N)
// on all the backend's threads. op(a) is a (M x K, stride lda) or, with
// transA, the transpose of a stored K x M; likewise for b. With accumulate
// false c is overwritten.
func (be *Backend) gemm(transA, transB bool, M, N, K int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	gemmOn(be.parallelWorkers, be.threads, be.pool, nil, transA, transB, M, N, K, a, lda, b, ldb, c, ldc, accumulate)
}

// packedMat is op(b) (K x N) packed once, block by block as gemmOn packs
// it: blocks[(jc/nc)*kBlocks + pc/kc] holds that block's panels, float32,
// or, for a bf16 freeze where the kernels read them, bfloat16 in half.
type packedMat struct {
	K, N    int
	kBlocks int
	blocks  [][]float32
	half    [][]uint16
}

func (p *packedMat) block(jc, pc int) bpanels {
	i := (jc/nc)*p.kBlocks + pc/kc
	if p.half != nil {
		return blockPanels(nil, p.half[i], min(kc, p.K-pc))
	}
	return blockPanels(p.blocks[i], nil, min(kc, p.K-pc))
}

// packMat packs all of op(b) on the backend's threads; with bf16 its
// values are rounded to bfloat16 (stored as such where bf16Panels).
func (be *Backend) packMat(transB bool, K, N int, b []float32, ldb int, bf16 bool) *packedMat {
	pm := &packedMat{K: K, N: N, kBlocks: (K + kc - 1) / kc}
	half := bf16 && bf16Panels()
	for jc := 0; jc < N; jc += nc {
		nb := min(nc, N-jc)
		panels := (nb + nr - 1) / nr
		for pc := 0; pc < K; pc += kc {
			kb := min(kc, K-pc)
			pb := make([]float32, panels*nr*kb)
			var ph []uint16
			if half {
				ph = make([]uint16, len(pb))
			}
			be.parallelWorkers(panels, func(_, lo, hi int) {
				packPanels(transB, b, ldb, pc, kb, jc, nb, lo, hi, pb)
				for jp := lo; jp < hi; jp++ {
					p := pb[jp*nr*kb : (jp+1)*nr*kb]
					switch {
					case half:
						packBF16(kb, p, ph[jp*nr*kb:(jp+1)*nr*kb])
					case bf16:
						roundBF16(p)
					}
				}
			})
			if half {
				pm.half = append(pm.half, ph)
			} else {
				pm.blocks = append(pm.blocks, pb)
			}
		}
	}
	return pm
}

// gemmSerial is gemm on the calling goroutine with its own scratch, for use
// inside work that is already parallel (attention heads).
func gemmSerial(s *gemmScratch, transA, transB bool, M, N, K int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	gemmOn(serial, 1, s, nil, transA, transB, M, N, K, a, lda, b, ldb, c, ldc, accumulate)
}

// causalPack is op(b) (K x N) packed once for the many strips of a
// product whose rows each need a part of it (causal attention): gemmOn's
// K blocks, kc deep, one after another, each a row of N's panels.
type causalPack struct {
	buf  []float32
	K, N int
}

// packCausal packs op(b) into *buf, grown as needed.
func packCausal(buf *[]float32, trans bool, b []float32, ldb, K, N int) causalPack {
	np := (N + nr - 1) / nr
	if need := np * nr * K; len(*buf) < need {
		*buf = make([]float32, need)
	}
	for pc := 0; pc < K; pc += kc {
		packPanels(trans, b, ldb, pc, min(kc, K-pc), 0, N, 0, np, (*buf)[np*nr*pc:])
	}
	return causalPack{buf: *buf, K: K, N: N}
}

// strip computes rows [i0, i0+mh) of c = (or +=, with accumulate) op(a)
// times the pack, over the pack's first jend panels and over k in [k0,
// k1) only, on the calling goroutine (pa: an A panel's scratch). Each
// element it writes has the bits gemmOn gives it when op(a)'s row is
// zero outside [k0, k1): the K blocks are gemmOn's, and a block's sum
// starts at +0 whether the zeros before k0 are added or not, a zero
// product leaves a sum that is not -0 as it is, and a block of zeros
// adds +0. Columns from jend*nr on are not written.
func (p causalPack) strip(pa []float32, transA bool, a []float32, lda, i0, mh, k0, k1, jend int, c []float32, ldc int, accumulate bool) {
	np := (p.N + nr - 1) / nr
	first := !accumulate
	if k0 >= k1 {
		if first {
			clearRows(c[i0*ldc:], ldc, mh, min(jend*nr, p.N))
		}
		return
	}
	for pc := k0 / kc * kc; pc < k1; pc += kc {
		ks, ke := max(pc, k0), min(pc+kc, k1)
		packABlock(transA, a, lda, i0, mh, ks, ke-ks, pa)
		bp := bpanels{f: p.buf[np*nr*pc+(ks-pc)*nr:], kb: ke - ks, ps: nr * min(kc, p.K-pc)}
		panelsOn(bp, pa, 0, jend, i0, mh, 0, p.N, first, c, ldc)
		first = false
	}
}

func serial(n int, fn func(worker, lo, hi int)) {
	if n > 0 {
		fn(0, 0, n)
	}
}

// gemmOn is the GEMM on par's workers; pre, when set, is op(b) already
// packed (packMat), so only A is packed here.
func gemmOn(par func(n int, fn func(worker, lo, hi int)), threads int, s *gemmScratch, pre *packedMat,
	transA, transB bool, M, N, K int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	if M == 0 || N == 0 {
		return
	}
	if K == 0 {
		if !accumulate {
			clearRows(c, ldc, M, N)
		}
		return
	}
	// Without accumulate, each tile of c is set by its first K block (the
	// kernel stores instead of adding; an edge tile is cleared first by the
	// worker that owns it), not cleared up front on one thread.
	zero := !accumulate
	// Every size goes through the packed kernel (no small-matrix shortcut):
	// an element's arithmetic must not depend on how many rows share the
	// call, so a sequence decodes to the same bits alone or in any batch.
	var pb []float32
	if pre == nil {
		pb = s.packedB(N)
	}
	icBlocks, mcb := rowBlocks(M)
	if pre == nil && icBlocks <= ownBlocks && (min(N, nc)+nr-1)/nr >= threads {
		gemmOwnPanels(par, s, pb, transA, transB, M, N, K, a, lda, b, ldb, c, ldc, zero, mcb)
		return
	}
	for jc := 0; jc < N; jc += nc {
		nb := min(nc, N-jc)
		panels := (nb + nr - 1) / nr
		// Split each A block's B panels into enough ranges to feed every thread.
		ranges := min(panels, max(1, (2*threads+icBlocks-1)/icBlocks))
		for pc := 0; pc < K; pc += kc {
			kb := min(kc, K-pc)
			bp := blockPanels(pb, nil, kb)
			if pre != nil {
				bp = pre.block(jc, pc)
			} else {
				par(panels, func(_, lo, hi int) {
					packPanels(transB, b, ldb, pc, kb, jc, nb, lo, hi, pb)
				})
			}
			par(icBlocks*ranges, func(w, lo, hi int) {
				pa := s.a[w]
				packed := -1
				for item := lo; item < hi; item++ {
					ib, rg := item/ranges, item%ranges
					ic := ib * mcb
					mb := min(mcb, M-ic)
					if packed != ib {
						packABlock(transA, a, lda, ic, mb, pc, kb, pa)
						packed = ib
					}
					jp, jend := rg*panels/ranges, (rg+1)*panels/ranges
					panelsOn(bp, pa, jp, jend, ic, mb, jc, nb, zero && pc == 0, c, ldc)
				}
			})
		}
	}
}

// rowBlocks splits M rows into as few A blocks as mc allows, of mcb rows
// each (the last one fewer), mcb a multiple of mr and as even as that
// makes them: 1024 rows are 7 x 132 + 100 where 7 x 144 + 16 would leave
// one thread 576 rows to the other's 448. How rows are blocked changes no
// value, since each C tile is still computed by one kernel over K blocks in
// order.
func rowBlocks(M int) (blocks, mcb int) {
	blocks = (M + mc - 1) / mc
	mcb = ((M+blocks-1)/blocks + mr - 1) / mr * mr
	return (M + mcb - 1) / mcb, mcb
}

// ownBlocks is the most A blocks (of up to mc rows) for which gemmOwnPanels
// runs, packing every block into each worker's scratch.
const ownBlocks = 2

// ownChunk is how many B panels a worker packs before computing them
// (32 x 32 KB: within L2 beside the packed A).
const ownChunk = 32

// gemmOwnPanels is gemmOn for a few rows and a B packed per call (a
// training step's activations against a weight, decoding shapes without
// frozen weights): each worker owns a contiguous range of B panels and
// packs them itself, a chunk at a time right before the kernel reads them,
// so a packed panel is read from its own core's L2 rather than written
// out to L3 by one pass over all of B and read back from there by every
// worker. Every worker packs all the rows of A (a few hundred, at most
// ownBlocks blocks). The tiles, their kernels and their K order are
// gemmOn's, so the bits are too.
func gemmOwnPanels(par func(n int, fn func(worker, lo, hi int)), s *gemmScratch, pb []float32,
	transA, transB bool, M, N, K int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int,
	zero bool, mcb int) {
	for jc := 0; jc < N; jc += nc {
		nb := min(nc, N-jc)
		panels := (nb + nr - 1) / nr
		for pc := 0; pc < K; pc += kc {
			kb := min(kc, K-pc)
			bp := blockPanels(pb, nil, kb)
			par(panels, func(w, lo, hi int) {
				pa := s.a[w]
				for ic := 0; ic < M; ic += mcb {
					packABlock(transA, a, lda, ic, min(mcb, M-ic), pc, kb, pa[ic*kb:])
				}
				for cs := lo; cs < hi; cs += ownChunk {
					ce := min(cs+ownChunk, hi)
					packPanels(transB, b, ldb, pc, kb, jc, nb, cs, ce, pb)
					for ic := 0; ic < M; ic += mcb {
						panelsOn(bp, pa[ic*kb:], cs, ce, ic, min(mcb, M-ic), jc, nb, zero && pc == 0, c, ldc)
					}
				}
			})
		}
	}
}

// packABlock packs rows [ic, ic+mb) of op(a), K block (pc, kb), into dst
// as panels of mr rows, one after another (the last zero-padded).
func packABlock(transA bool, a []float32, lda, ic, mb, pc, kb int, dst []float32) {
	for ip := 0; ip*mr < mb; ip++ {
		packA(transA, a, lda, ic+ip*mr, min(mr, mb-ip*mr), pc, kb, dst[ip*mr*kb:(ip+1)*mr*kb])
	}
}

// panelsOn computes B panels [jp, jend) of the block at column jc (nb
// columns wide) against the packed A block pa of rows [ic, ic+mb): C's
// tiles there, set by the product when first (the first K block, unless
// accumulating), added to otherwise.
func panelsOn(bp bpanels, pa []float32, jp, jend, ic, mb, jc, nb int, first bool, c []float32, ldc int) {
	kb := bp.kb
	if mb < 4 && rowKernel() {
		// Under four rows (decoding a few sequences): each real row
		// through four full panels at a time.
		for ; jp+4 <= jend && (jp+4)*nr <= nb; jp += 4 {
			j0 := jc + jp*nr
			for i := 0; i < mb; i++ {
				row := c[(ic+i)*ldc+j0 : (ic+i)*ldc+j0+4*nr]
				if first {
					clear(row)
				}
				bp.row4(jp, pa[i:], row)
			}
		}
	}
	var tile [mr * nr]float32
	for ; jp < jend; jp++ {
		j0, nw := jc+jp*nr, min(nr, nb-jp*nr)
		for ip := 0; ip*mr < mb; ip++ {
			ap := pa[ip*mr*kb : (ip+1)*mr*kb]
			i0, mh := ic+ip*mr, min(mr, mb-ip*mr)
			if mh == mr && nw == nr {
				// The first K block sets the tile, the rest add to it.
				bp.tile(jp, ap, c[i0*ldc+j0:], ldc, first)
				continue
			}
			if mh == mr && bp.narrow(jp, nw, ap, c[i0*ldc+j0:], ldc, first) {
				continue
			}
			if first {
				clearRows(c[i0*ldc+j0:], ldc, mh, nw)
			}
			clear(tile[:])
			bp.edge(jp, mh, nw, ap, &tile)
			for i := 0; i < mh; i++ {
				row, t := c[(i0+i)*ldc+j0:][:nw], tile[i*nr:][:nw]
				for j := addVec(row, row, t); j < nw; j++ {
					row[j] += t[j]
				}
			}
		}
	}
}

// clearRows zeroes the first n values of each of c's first m rows (row
// stride ldc).
func clearRows(c []float32, ldc, m, n int) {
	for i := 0; i < m; i++ {
		clear(c[i*ldc : i*ldc+n])
	}
}

// packA copies rows [i0, i0+mh) and columns [p0, p0+kb) of op(a) into dst as
// dst[p*mr+i], padding rows mh..mr-1 with zeros.
func packA(trans bool, a []float32, lda, i0, mh, p0, kb int, dst []float32) {
	if mh < mr {
		clear(dst[:kb*mr])
	}
	if trans { // op(a)[i][p] = a[p*lda+i]: each p reads mh contiguous values
		if mh == mr {
			// Through a local array: inline moves. A direct array copy
			// between the slices is a memmove call per row (they might
			// overlap, as far as the compiler knows).
			for p := 0; p < kb; p++ {
				t := *(*[mr]float32)(a[(p0+p)*lda+i0:])
				*(*[mr]float32)(dst[p*mr:]) = t
			}
			return
		}
		for p := 0; p < kb; p++ { // a few values a row: a loop, not a memmove call
			d, s := dst[p*mr:p*mr+mh], a[(p0+p)*lda+i0:(p0+p)*lda+i0+mh]
			for i := range d {
				d[i] = s[i]
			}
		}
		return
	}
	if mh == mr { // full panel: write dst sequentially, reading twelve row streams
		var rows [mr][]float32
		for i := range rows {
			rows[i] = a[(i0+i)*lda+p0 : (i0+i)*lda+p0+kb]
		}
		for p := packRowsVec(a[i0*lda+p0:], lda, kb, mr, dst, mr); p < kb; p++ {
			d := dst[p*mr : p*mr+mr : p*mr+mr]
			d[0], d[1], d[2], d[3] = rows[0][p], rows[1][p], rows[2][p], rows[3][p]
			d[4], d[5], d[6], d[7] = rows[4][p], rows[5][p], rows[6][p], rows[7][p]
			d[8], d[9], d[10], d[11] = rows[8][p], rows[9][p], rows[10][p], rows[11][p]
		}
		return
	}
	for i := 0; i < mh; i++ {
		src := a[(i0+i)*lda+p0 : (i0+i)*lda+p0+kb]
		for p, v := range src {
			dst[p*mr+i] = v
		}
	}
}

// panelGroup is how many full panels of a b stored as is packPanels fills
// together, row by row of b: each row of b is then read 1 KiB at a time,
// not 128 bytes at a time from each of kb rows, which keeps a few streams
// for the prefetcher instead of hundreds (2.3x on a weight larger than the
// caches).
const panelGroup = 8

// packPanels packs panels [lo, hi) of a kb x nb block of op(b) starting at
// row p0, column j0, each nr x kb, into dst at panel jp's place
// dst[jp*nr*kb:], as packB packs one.
func packPanels(trans bool, b []float32, ldb, p0, kb, j0, nb, lo, hi int, dst []float32) {
	jp := lo
	if !trans {
		for ; jp+panelGroup <= hi && (jp+panelGroup)*nr <= nb; jp += panelGroup {
			d := dst[jp*nr*kb : (jp+panelGroup)*nr*kb]
			for p := 0; p < kb; p++ {
				row := b[(p0+p)*ldb+j0+jp*nr : (p0+p)*ldb+j0+(jp+panelGroup)*nr]
				for q := 0; q < panelGroup; q++ {
					t := *(*[nr]float32)(row[q*nr:]) // inline moves (see packA)
					*(*[nr]float32)(d[q*nr*kb+p*nr:]) = t
				}
			}
		}
	}
	for ; jp < hi; jp++ {
		packB(trans, b, ldb, p0, kb, j0+jp*nr, min(nr, nb-jp*nr), dst[jp*nr*kb:(jp+1)*nr*kb])
	}
}

// packB copies rows [p0, p0+kb) and columns [j0, j0+nw) of op(b) into dst as
// dst[p*nr+j], padding columns nw..nr-1 with zeros.
func packB(trans bool, b []float32, ldb, p0, kb, j0, nw int, dst []float32) {
	if nw < nr {
		clear(dst[:kb*nr])
	}
	if !trans { // op(b)[p][j] = b[p*ldb+j]: each p reads nw contiguous values
		if nw == nr {
			// Through a local array: inline moves, not a memmove call per
			// row (see packA).
			for p := 0; p < kb; p++ {
				t := *(*[nr]float32)(b[(p0+p)*ldb+j0:])
				*(*[nr]float32)(dst[p*nr:]) = t
			}
			return
		}
		for p := 0; p < kb; p++ { // under 32 values a row: moves, not a memmove call
			d, s := dst[p*nr:p*nr+nw], b[(p0+p)*ldb+j0:(p0+p)*ldb+j0+nw]
			j := 0
			if nw >= 16 { // a narrow head's row (16 or 24 values)
				*(*[16]float32)(d) = *(*[16]float32)(s)
				j = 16
			}
			for ; j < nw; j++ {
				d[j] = s[j]
			}
		}
		return
	}
	// op(b)[p][j] = b[(j0+j)*ldb+p]: each of the nw rows of b becomes a
	// column of the panel, four rows at a time in vector registers.
	vec := nw &^ 3
	done := packRowsVec(b[j0*ldb+p0:], ldb, kb, vec, dst, nr)
	for j := 0; j < nw; j++ {
		from := done // the rest of a vector-packed row, or all of another
		if j >= vec {
			from = 0
		}
		src := b[(j0+j)*ldb+p0+from : (j0+j)*ldb+p0+kb]
		for p, v := range src {
			dst[(from+p)*nr+j] = v
		}
	}
}

// kern12x32Go is the portable micro-kernel.
func kern12x32Go(kb int, a, b, c []float32, ldc int) {
	var acc [mr * nr]float32
	for p := 0; p < kb; p++ {
		ap := a[p*mr : p*mr+mr]
		bp := b[p*nr : p*nr+nr]
		for i, ai := range ap {
			row := acc[i*nr : i*nr+nr]
			for j, bj := range bp {
				row[j] += ai * bj
			}
		}
	}
	for i := 0; i < mr; i++ {
		row := c[i*ldc : i*ldc+nr]
		for j := range row {
			row[j] += acc[i*nr+j]
		}
	}
}

// gemmNaive is the reference: c += op(a) @ op(b), one dot product per element.
func gemmNaive(transA, transB bool, M, N, K int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			var s float32
			for p := 0; p < K; p++ {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += av * bv
			}
			c[i*ldc+j] += s
		}
	}
}
