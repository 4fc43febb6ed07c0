package cpu

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/corl-project/corl/gpu"
)

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = r.Float32()*2 - 1
	}
	return s
}

// TestGemmMatchesNaive compares the blocked kernel with the triple loop on
// awkward shapes (1, primes, just past block edges) and all transposes.
func TestGemmMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	shapes := [][3]int{{1, 1, 1}, {1, 37, 5}, {13, 1, 300}, {12, 32, 1}, {17, 33, 7}, {29, 61, 257},
		{145, 97, 513}, {300, 4100, 3}, {mc + 1, nr*3 + 5, kc*2 + 1}, {64, 64, 64}}
	for _, threads := range []int{1, 3} {
		be := New(threads)
		for _, sh := range shapes {
			M, N, K := sh[0], sh[1], sh[2]
			for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				name := fmt.Sprintf("t%d/%dx%dx%d/tA=%v,tB=%v", threads, M, N, K, tr[0], tr[1])
				a, b := randSlice(r, M*K), randSlice(r, K*N)
				lda, ldb := K, N
				if tr[0] {
					lda = M
				}
				if tr[1] {
					ldb = K
				}
				c0 := randSlice(r, M*N)
				want := append([]float32(nil), c0...)
				gemmNaive(tr[0], tr[1], M, N, K, a, lda, b, ldb, want, N)
				got := append([]float32(nil), c0...)
				be.gemm(tr[0], tr[1], M, N, K, a, lda, b, ldb, got, N, true)
				// Summation order differs (blocked, FMA): allow K-proportional rounding.
				tol := 1e-6 * float64(K+8) * 2
				for i := range got {
					if d := math.Abs(float64(got[i] - want[i])); d > tol {
						t.Fatalf("%s: c[%d] = %v, want %v (diff %g > %g)", name, i, got[i], want[i], d, tol)
					}
				}
				// Without accumulate, whatever c held is overwritten.
				want = make([]float32, M*N)
				gemmNaive(tr[0], tr[1], M, N, K, a, lda, b, ldb, want, N)
				got = append([]float32(nil), c0...)
				be.gemm(tr[0], tr[1], M, N, K, a, lda, b, ldb, got, N, false)
				for i := range got {
					if d := math.Abs(float64(got[i] - want[i])); d > tol {
						t.Fatalf("%s, overwriting: c[%d] = %v, want %v (diff %g > %g)", name, i, got[i], want[i], d, tol)
					}
				}
			}
		}
	}
}

// TestGemmThreadIndependent checks that the result is bitwise equal for any
// thread count. 301 rows are three A blocks (workers share B's panels);
// 200 rows are two, where each worker packs its own panels
// (gemmOwnPanels), except on 7 threads, more than 100 columns' 4 panels,
// which take the shared path: so the two paths must agree as well. Both
// storage orders of b, since each packs them differently.
func TestGemmThreadIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][3]int{{301, 517, 700}, {200, 100, 700}} {
		M, N, K := sh[0], sh[1], sh[2]
		a, b := randSlice(r, M*K), randSlice(r, K*N)
		for _, transB := range []bool{true, false} {
			ldb := K
			if !transB {
				ldb = N
			}
			var ref []float32
			for _, th := range []int{1, 2, 3, 7} {
				c := make([]float32, M*N)
				New(th).gemm(false, transB, M, N, K, a, K, b, ldb, c, N, false)
				if ref == nil {
					ref = c
					continue
				}
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(ref[i]) {
						t.Fatalf("%dx%dx%d transB %v, threads=%d: c[%d] = %v differs from 1 thread's %v", M, N, K, transB, th, i, c[i], ref[i])
					}
				}
			}
		}
	}
}

// TestRowBlocksAreEven: A blocks cover the rows, hold at most mc rows in
// whole micro-panels, are as few as mc allows, and differ by less than a
// micro-panel per block, so threads given whole blocks get even shares.
func TestRowBlocksAreEven(t *testing.T) {
	for M := 1; M <= 3000; M++ {
		blocks, mcb := rowBlocks(M)
		last := M - (blocks-1)*mcb
		switch {
		case blocks != (M+mc-1)/mc:
			t.Fatalf("M=%d: %d blocks, want %d", M, blocks, (M+mc-1)/mc)
		case mcb%mr != 0 || mcb > mc:
			t.Fatalf("M=%d: blocks of %d rows, want a multiple of %d up to %d", M, mcb, mr, mc)
		case last <= 0 || last > mcb:
			t.Fatalf("M=%d: %d blocks of %d leave %d rows for the last", M, blocks, mcb, last)
		case mcb-last >= blocks*mr:
			t.Fatalf("M=%d: blocks of %d and a last of %d, uneven by more than %d", M, mcb, last, blocks*mr)
		}
	}
	if b, m := rowBlocks(1024); b != 8 || m != 132 {
		t.Errorf("1024 rows: %d blocks of %d, want 8 of 132", b, m)
	}
}

// TestGemmRowsIndependentOfM: a row's result has the same bits whatever the
// number of rows in the call (no size-dependent shortcut), which makes a
// sequence decode identically alone or in any batch.
func TestGemmRowsIndependentOfM(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	N, K := 45, 70
	b := randSlice(r, K*N)
	be := New(2)
	for _, M := range []int{2, 13, 37} {
		a := randSlice(r, M*K)
		all := make([]float32, M*N)
		be.gemm(false, true, M, N, K, a, K, b, K, all, N, false)
		for i := 0; i < M; i++ {
			one := make([]float32, N)
			be.gemm(false, true, 1, N, K, a[i*K:(i+1)*K], K, b, K, one, N, false)
			for j := range one {
				if math.Float32bits(one[j]) != math.Float32bits(all[i*N+j]) {
					t.Fatalf("M=%d row %d col %d: %v alone, %v in the batch", M, i, j, one[j], all[i*N+j])
				}
			}
		}
	}
}

// TestFrozenWeightsMatchUnfrozen: a MatMulForward whose weight is frozen
// (packed once and reused) gives the per-call path's bits, for shapes that
// span several K and N blocks; after release, a changed weight is read
// afresh, not from the stale packing.
func TestFrozenWeightsMatchUnfrozen(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sz := range [][3]int{{1, 7, 5}, {5, 300, 33}, {13, 257, 4100}} {
		N, C, OC := sz[0], sz[1], sz[2]
		be := New(2)
		params := make([]float32, 10+OC*C)
		for i := range params {
			params[i] = rng.Float32()*2 - 1
		}
		x := make([]float32, N*C)
		for i := range x {
			x[i] = rng.Float32()*2 - 1
		}
		pb := Wrap(params)
		w := pb.Slice(10, OC*C)
		want := make([]float32, N*OC)
		be.MatMulForward(Wrap(want), Wrap(x), w, nil, N, C, OC)
		release := be.FreezeWeights(pb)
		for rep := 0; rep < 2; rep++ { // packs, then reuses
			got := make([]float32, N*OC)
			be.MatMulForward(Wrap(got), Wrap(x), w, nil, N, C, OC)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v rep %d: element %d: frozen %v, per-call %v", sz, rep, i, got[i], want[i])
				}
			}
		}
		release()
		params[10] += 1
		be.MatMulForward(Wrap(want), Wrap(x), w, nil, N, C, OC)
		fresh := New(2)
		ref := make([]float32, N*OC)
		fresh.MatMulForward(Wrap(ref), Wrap(x), w, nil, N, C, OC)
		for i := range ref {
			if ref[i] != want[i] {
				t.Fatalf("%v: after release, element %d is %v; a fresh backend gives %v (stale packing)", sz, i, want[i], ref[i])
			}
		}
	}
}

// TestAVX2KernelMatchesAVX512Bitwise: both kernels accumulate each element
// from zero in k order with fused multiply-adds, so a machine without
// AVX-512 computes the same bits.
func TestAVX2KernelMatchesAVX512Bitwise(t *testing.T) {
	if SetKernel("avx512") != nil || SetKernel("avx2") != nil {
		t.Skip("this CPU lacks AVX-512 or AVX2")
	}
	defer SetKernel("")
	r := rand.New(rand.NewPCG(3, 4))
	for _, sz := range [][3]int{{12, 32, 256}, {13, 33, 257}, {100, 70, 600}, {1, 5, 3}} {
		M, N, K := sz[0], sz[1], sz[2]
		a, b := randSlice(r, M*K), randSlice(r, K*N)
		run := func(kernel string) []float32 {
			SetKernel(kernel)
			c := randSlice(rand.New(rand.NewPCG(9, 9)), M*N)
			New(2).gemm(false, false, M, N, K, a, K, b, N, c, N, true)
			return c
		}
		x, y := run("avx512"), run("avx2")
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				t.Fatalf("%v element %d: avx512 %v, avx2 %v", sz, i, x[i], y[i])
			}
		}
	}
}

// TestAVX2VectorsMatchAVX512Bitwise: dot (the same lane sums and reduction
// order) and axpy give the AVX-512 path's bits.
func TestAVX2VectorsMatchAVX512Bitwise(t *testing.T) {
	if SetKernel("avx512") != nil || SetKernel("avx2") != nil {
		t.Skip("this CPU lacks AVX-512 or AVX2")
	}
	defer SetKernel("")
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{16, 64, 1008} {
		a, b := randSlice(r, n), randSlice(r, n)
		SetKernel("avx512")
		d512, _ := dotVec(a, b)
		y512 := append([]float32(nil), b...)
		axpyVec(y512, 0.37, a)
		SetKernel("avx2")
		d2, _ := dotVec(a, b)
		y2 := append([]float32(nil), b...)
		axpyVec(y2, 0.37, a)
		if math.Float32bits(d512) != math.Float32bits(d2) {
			t.Errorf("n %d: dot avx512 %v, avx2 %v", n, d512, d2)
		}
		for i := range y2 {
			if math.Float32bits(y512[i]) != math.Float32bits(y2[i]) {
				t.Fatalf("n %d: axpy element %d: %v vs %v", n, i, y512[i], y2[i])
			}
		}
	}
}

// gemmBitsGolden is FNV-1a of the bits of gemmBitsOutputs, computed with
// the AVX-512 kernel; the AVX2 and NEON kernels must give it too, so a
// model trained on any of these machines continues bitwise on another.
const gemmBitsGolden = 0x2e6ce26be210d1fc

func gemmBitsOutputs() []float32 {
	r := rand.New(rand.NewPCG(11, 12))
	var out []float32
	for _, sz := range [][3]int{{12, 32, 256}, {37, 70, 300}, {5, 33, 17}} {
		M, N, K := sz[0], sz[1], sz[2]
		a, b, c := randSlice(r, M*K), randSlice(r, N*K), randSlice(r, M*N)
		New(2).gemm(false, true, M, N, K, a, K, b, K, c, N, true)
		out = append(out, c...)
	}
	return out
}

func TestGemmBitsAcrossMachines(t *testing.T) {
	if kernelName == "go" {
		t.Skip("the portable kernel rounds differently (no fused multiply-add on amd64)")
	}
	h := fnv.New64a()
	for _, v := range gemmBitsOutputs() {
		binary.Write(h, binary.LittleEndian, math.Float32bits(v))
	}
	if got := h.Sum64(); got != gemmBitsGolden {
		t.Errorf("kernel %s: output hash %#x, want %#x (the AVX-512 kernel's)", kernelName, got, uint64(gemmBitsGolden))
	}
}

// TestFusedAttentionKernelsMatchDotAndAxpy: the fused score and mix
// kernels give the bits of the per-row dot and axpy they replace, so
// attention (training and decoding) computes what it did before.
func TestFusedAttentionKernelsMatchDotAndAxpy(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, hs := range []int{4, 8, 16, 24, 40, 64, 100, 128} {
		const n, stride = 37, 200
		q, k := randSlice(r, hs), randSlice(r, n*stride)
		got := make([]float32, n)
		if !attnScores(got, q, k, stride) {
			t.Skip("no fused kernel on this CPU")
		}
		for j := 0; j < n; j++ {
			if want := dot(q, k[j*stride:][:hs]); math.Float32bits(got[j]) != math.Float32bits(want) && !(got[j] == 0 && want == 0) {
				t.Fatalf("hs %d score %d: fused %v, dot %v", hs, j, got[j], want)
			}
		}
		p := randSlice(r, n)
		fused, loop := make([]float32, hs), make([]float32, hs)
		attnMix(fused, p, k, stride)
		for j := 0; j < n; j++ {
			axpy(loop, p[j], k[j*stride:][:hs])
		}
		for i := range fused {
			if math.Float32bits(fused[i]) != math.Float32bits(loop[i]) {
				t.Fatalf("hs %d mix element %d: fused %v, axpy %v", hs, i, fused[i], loop[i])
			}
		}
	}
}

// TestSoftmaxRowKernelMatchesGo: the AVX-512 softmax row agrees with the Go
// loop within float32 rounding (its exp fuses multiply-adds and its sum runs
// over 16 lanes) for every length from 1 to past three vectors, including
// scores whose exponentials underflow, and writes nothing past the row.
func TestSoftmaxRowKernelMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const guard = float32(12345)
	for n := 1; n <= 53; n++ {
		for _, spread := range []float32{1, 40, 300} {
			src := randSlice(r, n)
			for i := range src {
				src[i] *= spread
			}
			got := append(append([]float32{}, src...), guard, guard)
			if !softmaxRowVec(got[:n], 0.25) {
				t.Skip("no softmax kernel on this CPU")
			}
			want := append([]float32{}, src...)
			softmaxRowGo(want, 0.25)
			var sum float64
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 4e-7+4e-6*float64(want[i]) {
					t.Fatalf("n %d spread %v element %d: kernel %v, Go %v", n, spread, i, got[i], want[i])
				}
				sum += float64(got[i])
			}
			if math.Abs(sum-1) > 1e-5 {
				t.Fatalf("n %d spread %v: probabilities sum to %v", n, spread, sum)
			}
			if got[n] != guard || got[n+1] != guard {
				t.Fatalf("n %d: wrote past the row: %v %v", n, got[n], got[n+1])
			}
		}
	}
}

// TestLogSumExpKernelsMatchFloat64: the log-probability kernels (a row's
// maximum and log-sum-exp; scale*exp(row - shift) for the backward) agree
// with float64 math.Exp within float32 rounding, at every tail length, on
// spreads from logits near zero to a vocabulary of 151,936, and write
// nothing past the row.
func TestLogSumExpKernelsMatchFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const guard = float32(12345)
	lengths := []int{151936, 50257, 257}
	for n := 1; n <= 53; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for _, spread := range []float32{1, 40, 300} {
			row := randSlice(r, n)
			for i := range row {
				row[i] = row[i]*spread + 3
			}
			maxv, lse, ok := rowLSEVec(row)
			if !ok {
				t.Skip("no log-sum-exp kernel on this CPU")
			}
			wantMax := float32(math.Inf(-1))
			for _, v := range row {
				wantMax = max(wantMax, v)
			}
			var s float64
			for _, v := range row {
				s += math.Exp(float64(v - wantMax))
			}
			wantLSE := float64(wantMax) + math.Log(s)
			if maxv != wantMax || math.Abs(lse-wantLSE) > 1e-6*max(1, math.Abs(wantLSE)) {
				t.Fatalf("n %d spread %v: max %v lse %v, want %v %v", n, spread, maxv, lse, wantMax, wantLSE)
			}
			dst := make([]float32, n+2)
			dst[n], dst[n+1] = guard, guard
			if !expScaleVec(dst[:n], row, maxv, float32(lse-float64(maxv)), -0.5) {
				t.Fatal("expScaleVec refused where rowLSEVec ran")
			}
			var sum float64
			for j, v := range row {
				want := -0.5 * math.Exp(float64(v)-lse)
				if d := math.Abs(float64(dst[j]) - want); d > 1e-30+4e-6*math.Abs(want) {
					t.Fatalf("n %d spread %v element %d: kernel %v, float64 %v", n, spread, j, dst[j], want)
				}
				sum += float64(dst[j])
			}
			if math.Abs(sum+0.5) > 1e-5 {
				t.Fatalf("n %d spread %v: scaled probabilities sum to %v, want -0.5", n, spread, sum)
			}
			if dst[n] != guard || dst[n+1] != guard {
				t.Fatalf("n %d: wrote past the row: %v %v", n, dst[n], dst[n+1])
			}
		}
	}
}

// TestAllHeadsDecodeAttentionMatchesOneHeadAtATime: decoding attention
// (fewer than decodeRows query rows) runs a batch row's heads together over
// each cache row; every output and probability has the bits of attendRows
// run head by head, for head sizes with and without a 4-float tail, one to
// four query heads per key/value head, one to three query rows, and rows at
// different lengths; and for a batch whose rows are read front to back
// first (streamBytes).
func TestAllHeadsDecodeAttentionMatchesOneHeadAtATime(t *testing.T) {
	if !attnRows(16) {
		t.Skip("no all-heads attention kernel on this CPU")
	}
	r := rand.New(rand.NewPCG(11, 12))
	for _, hs := range []int{4, 12, 16, 24, 64} {
		for _, heads := range [][2]int{{1, 1}, {4, 4}, {4, 2}, {8, 2}, {3, 1}} {
			for tq := 1; tq < decodeRows; tq++ {
				checkAllHeadsDecode(t, r, gpu.AttnShape{B: 3, Tq: tq, Tk: 40, Tcap: 44, NH: heads[0], NKV: heads[1], HS: hs, KLen: []int32{40, 17, int32(tq)}})
			}
		}
	}
	s := gpu.AttnShape{B: 40, Tq: 1, Tk: 100, Tcap: 103, NH: 4, NKV: 4, HS: 64}
	if s.B*s.Tk*s.NKV*s.HS*8 < streamBytes {
		t.Fatal("the streamed shape is under streamBytes")
	}
	for b := 0; b < s.B; b++ {
		s.KLen = append(s.KLen, int32(1+b*99/(s.B-1)))
	}
	checkAllHeadsDecode(t, r, s)
}

// checkAllHeadsDecode runs AttentionForward on random q, k, v of shape s
// (on two threads) and compares every output and probability bit for bit
// with attendRows run a head at a time.
func checkAllHeadsDecode(t *testing.T, r *rand.Rand, s gpu.AttnShape) {
	t.Helper()
	C, CKV := s.NH*s.HS, s.NKV*s.HS
	q, k, v := randSlice(r, s.B*s.Tq*C), randSlice(r, s.B*s.Tcap*CKV), randSlice(r, s.B*s.Tcap*CKV)
	be := New(2)
	out, att := be.Alloc(s.B*s.Tq*C), be.Alloc(s.B*s.NH*s.Tq*s.Tk)
	Data(att)[len(Data(att))-1] = 7 // a stale probability past the keys must be cleared
	be.AttentionForward(out, att, &Buffer{q}, &Buffer{k}, &Buffer{v}, s)
	wantOut, wantAtt := make([]float32, s.B*s.Tq*C), make([]float32, s.B*s.NH*s.Tq*s.Tk)
	scale := float32(1 / math.Sqrt(float64(s.HS)))
	for b := 0; b < s.B; b++ {
		for h := 0; h < s.NH; h++ {
			qo, kvo := b*s.Tq*C+h*s.HS, b*s.Tcap*CKV+(h/(s.NH/s.NKV))*s.HS
			attendRows(wantOut[qo:], wantAtt[(b*s.NH+h)*s.Tq*s.Tk:][:s.Tq*s.Tk], q[qo:], k[kvo:], v[kvo:], s, s.Keys(b), C, CKV, scale)
		}
	}
	for i, x := range Data(out) {
		if math.Float32bits(x) != math.Float32bits(wantOut[i]) {
			t.Fatalf("hs %d heads %d/%d tq %d batch %d: output %d is %v, head by head %v", s.HS, s.NH, s.NKV, s.Tq, s.B, i, x, wantOut[i])
		}
	}
	for i, x := range Data(att) {
		if math.Float32bits(x) != math.Float32bits(wantAtt[i]) {
			t.Fatalf("hs %d heads %d/%d tq %d batch %d: probability %d is %v, head by head %v", s.HS, s.NH, s.NKV, s.Tq, s.B, i, x, wantAtt[i])
		}
	}
}

// TestNormAndAddKernelsMatchGo: the norms' sums (of squares, of values, of
// squared deviations), their row scalings and the add give the same bits
// from the AVX-512 and the AVX2 kernels as from the Go loops other machines
// run, at every tail length (so a norm is the same on every machine), and
// the sum of squares is the float64 sum.
func TestNormAndAddKernelsMatchGo(t *testing.T) {
	defer SetKernel("")
	for _, kern := range vectorKernels(t) {
		testNormAndAddKernels(t, kern)
	}
}

// vectorKernels returns the vector kernels this CPU can run ("avx512",
// "avx2"), skipping the test when it has none.
func vectorKernels(t *testing.T) []string {
	ks, missing := availableVectorKernels()
	for _, err := range missing {
		t.Log(err)
	}
	if len(ks) == 0 {
		t.Skip("this CPU has no vector kernels")
	}
	return ks
}

// availableVectorKernels returns the vector kernels this CPU runs, and
// why each other one does not.
func availableVectorKernels() (ks []string, missing []error) {
	for _, k := range []string{"avx512", "avx2"} {
		if err := SetKernel(k); err != nil {
			missing = append(missing, fmt.Errorf("%s: %w", k, err))
			continue
		}
		ks = append(ks, k)
	}
	SetKernel("")
	return ks, missing
}

func testNormAndAddKernels(t *testing.T, kern string) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 256, 1000} {
		x, w, y := randSlice(r, n), randSlice(r, n), randSlice(r, n)
		for i := range x {
			x[i] *= float32(1 + i%5*100) // magnitudes far apart, so the order of the sum shows
		}
		var exact float64
		for _, v := range x {
			exact += float64(v) * float64(v)
		}
		SetKernel(kern)
		ssVec, sumVec, devVec := sumSquares(x), sumLanes(x), sqDevLanes(x, 0.3)
		lnVec := make([]float32, n)
		for i := layerNormRowVec(lnVec, x, w, y, 0.3, 1.7); i < n; i++ {
			lnVec[i] = (x[i]-0.3)*1.7*w[i] + y[i]
		}
		scVec, addVecOut := make([]float32, n), make([]float32, n)
		for i := scaleRowVec(scVec, x, w, 0.37); i < n; i++ {
			scVec[i] = x[i] * 0.37 * w[i]
		}
		for i := addVec(addVecOut, x, y); i < n; i++ {
			addVecOut[i] = x[i] + y[i]
		}
		SetKernel("go")
		for _, c := range []struct {
			what      string
			avx, port float64
		}{{"sum of squares", ssVec, sumSquares(x)}, {"sum", sumVec, sumLanes(x)}, {"squared deviations", devVec, sqDevLanes(x, 0.3)}} {
			if math.Float64bits(c.avx) != math.Float64bits(c.port) {
				t.Errorf("%s n %d: %s vector %v, go %v", kern, n, c.what, c.avx, c.port)
			}
		}
		if math.Abs(ssVec-exact) > 1e-12*exact {
			t.Errorf("%s n %d: sum of squares %v, float64 loop %v", kern, n, ssVec, exact)
		}
		for i := range x {
			if sc := x[i] * 0.37 * w[i]; math.Float32bits(scVec[i]) != math.Float32bits(sc) {
				t.Fatalf("%s n %d: scaled element %d: kernel %v, go %v", kern, n, i, scVec[i], sc)
			}
			if ln := (x[i]-0.3)*1.7*w[i] + y[i]; math.Float32bits(lnVec[i]) != math.Float32bits(ln) {
				t.Fatalf("%s n %d: layer-normed element %d: kernel %v, go %v", kern, n, i, lnVec[i], ln)
			}
			if a := x[i] + y[i]; math.Float32bits(addVecOut[i]) != math.Float32bits(a) {
				t.Fatalf("%s n %d: added element %d: kernel %v, go %v", kern, n, i, addVecOut[i], a)
			}
		}
	}
}

// TestFewRowsMatchTheBatchAcrossPanels: with under four rows the GEMM takes
// four full B panels at a time through the one-row kernel; each row keeps
// the bits it has in a batch of 12 or 37 (the wider kernels), setting C and
// adding to it, across several K blocks and edge panels.
func TestFewRowsMatchTheBatchAcrossPanels(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, sh := range []struct{ N, K int }{{300, 70}, {512, 600}, {128, 1}, {160, 257}} {
		b := randSlice(r, sh.K*sh.N)
		for _, M := range []int{12, 37} {
			a := randSlice(r, M*sh.K)
			be := New(2)
			all := make([]float32, M*sh.N)
			be.gemm(false, true, M, sh.N, sh.K, a, sh.K, b, sh.K, all, sh.N, false)
			twice := append([]float32(nil), all...)
			be.gemm(false, true, M, sh.N, sh.K, a, sh.K, b, sh.K, twice, sh.N, true)
			for _, few := range []int{1, 2, 3} {
				got := make([]float32, few*sh.N)
				for i := range got {
					got[i] = float32(i) // overwritten: accumulate is false
				}
				be.gemm(false, true, few, sh.N, sh.K, a, sh.K, b, sh.K, got, sh.N, false)
				added := append([]float32(nil), all[:few*sh.N]...)
				be.gemm(false, true, few, sh.N, sh.K, a, sh.K, b, sh.K, added, sh.N, true)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(all[i]) || math.Float32bits(added[i]) != math.Float32bits(twice[i]) {
						t.Fatalf("N %d K %d, %d rows, value %d: %v and %v added, %v and %v in a batch of %d",
							sh.N, sh.K, few, i, got[i], added[i], all[i], twice[i], M)
					}
				}
			}
		}
	}
}

// TestPacksMatchTheirDefinition checks packA and packB, under every vector
// kernel and portable Go, against the layout they promise, element by
// element: panel widths that are and are not multiples of four, depths
// that are and are not multiples of the vector width, offsets into a
// larger matrix, both storage orders.
func TestPacksMatchTheirDefinition(t *testing.T) {
	defer SetKernel("")
	kernels, _ := availableVectorKernels()
	r := rand.New(rand.NewPCG(17, 18))
	const rows, cols, i0, p0 = 300, 301, 5, 3 // the stored matrix, and where the block starts
	src := randSlice(r, rows*cols)
	for _, kern := range append(kernels, "go") {
		if err := SetKernel(kern); err != nil {
			t.Fatal(err)
		}
		for _, kb := range []int{1, 7, 8, 9, 15, 16, 17, 40, 256} {
			for _, w := range []int{1, 3, 4, 5, 8, 12, 28, 31, 32} {
				for _, trans := range []bool{false, true} {
					// op(m)[x][p] for the block's row x < w and depth p < kb:
					// with trans the matrix is stored depth-major.
					at := func(x, p int) float32 {
						if trans {
							return src[(p0+p)*cols+i0+x]
						}
						return src[(i0+x)*cols+p0+p]
					}
					// check compares a packed panel, width values a depth
					// step, with op(m): its first w values, then zeros.
					check := func(what string, dst []float32, width int) {
						for p := 0; p < kb; p++ {
							for x := 0; x < width; x++ {
								want := float32(0)
								if x < w {
									want = at(x, p)
								}
								if dst[p*width+x] != want {
									t.Fatalf("%s %s trans=%v kb %d width %d: [%d][%d] = %v, want %v", kern, what, trans, kb, w, p, x, dst[p*width+x], want)
								}
							}
						}
					}
					if w <= mr {
						dst := randSlice(r, kb*mr) // padding must be written, not left
						packA(trans, src, cols, i0, w, p0, kb, dst)
						check("packA", dst, mr)
					}
					// packB's op(b)[p][j] is op(m) transposed: b stored as is
					// is depth-major.
					dst := randSlice(r, kb*nr)
					packB(!trans, src, cols, p0, kb, i0, w, dst)
					check("packB (trans flipped)", dst, nr)
				}
			}
		}
	}
	// packPanels fills a range of panels as packB fills each of them, in
	// groups of panelGroup or not, with the block's last panel narrow.
	const big = 700
	wide := randSlice(r, big*big)
	for _, kern := range append(kernels, "go") {
		SetKernel(kern)
		for _, trans := range []bool{false, true} {
			for _, nb := range []int{3 * nr, panelGroup * nr, panelGroup*nr + 5, 20*nr + 17} {
				panels := (nb + nr - 1) / nr
				for _, rg := range [][2]int{{0, panels}, {1, panels}, {3, panels - 1}} {
					const kb = 40
					got, want := make([]float32, panels*nr*kb), make([]float32, panels*nr*kb)
					packPanels(trans, wide, big, p0, kb, i0, nb, rg[0], rg[1], got)
					for jp := rg[0]; jp < rg[1]; jp++ {
						packB(trans, wide, big, p0, kb, i0+jp*nr, min(nr, nb-jp*nr), want[jp*nr*kb:(jp+1)*nr*kb])
					}
					for x := range got {
						if got[x] != want[x] {
							t.Fatalf("%s packPanels trans=%v nb %d panels %v: [%d] = %v, packB %v", kern, trans, nb, rg, x, got[x], want[x])
						}
					}
				}
			}
		}
	}
}

// TestNarrowPanelsMatchTheEdgePath: kernNarrow writes into C, for every
// width under a panel's, set or added, what the edge path writes there
// (kernEdge into a cleared tile, then added to C, cleared first when
// set), bit for bit, and leaves C's other columns alone.
func TestNarrowPanelsMatchTheEdgePath(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const ldc = nr + 5
	for _, kb := range []int{1, 7, 16, 256} {
		a := randSlice(r, kb*mr)
		for nw := 1; nw < nr; nw++ {
			b := randSlice(r, kb*nr)
			for p := 0; p < kb; p++ {
				clear(b[p*nr+nw : (p+1)*nr]) // packB's zero padding
			}
			for _, set := range []bool{false, true} {
				c0 := randSlice(r, mr*ldc)
				got := append([]float32(nil), c0...)
				if !kernNarrow(kb, nw, a, b, got, ldc, set) {
					t.Skip("no narrow-panel kernel on this CPU")
				}
				want := append([]float32(nil), c0...)
				if set {
					clearRows(want, ldc, mr, nw)
				}
				var tile [mr * nr]float32
				kernEdge(kb, mr, nr, a, b, &tile)
				for i := 0; i < mr; i++ {
					for j := 0; j < nw; j++ {
						want[i*ldc+j] += tile[i*nr+j]
					}
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("kb %d nw %d set %v: C[%d][%d] = %v, the edge path gives %v", kb, nw, set, i/ldc, i%ldc, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestMatMulFLOPsCounted: every MatMulForward and MatMulBackward product
// adds its 2*N*C*OC FLOPs to the count, a Split part's to its backend's.
func TestMatMulFLOPsCounted(t *testing.T) {
	const N, C, OC = 5, 7, 3
	be := New(2)
	x, w, out := Wrap(make([]float32, N*C)), Wrap(make([]float32, OC*C)), Wrap(make([]float32, N*OC))
	dx, dw := Wrap(make([]float32, N*C)), Wrap(make([]float32, OC*C))
	be.MatMulForward(out, x, w, nil, N, C, OC)
	be.MatMulBackward(dx, dw, nil, out, x, w, N, C, OC)
	be.MatMulBackward(nil, dw, nil, out, x, w, N, C, OC)
	be.Split(2)[1].MatMulForward(out, x, w, nil, N, C, OC)
	if got, want := be.MatMulFLOPs(), float64(5*2*N*C*OC); got != want {
		t.Errorf("counted %v FLOPs, want %v", got, want)
	}
}
