package cpu

import (
	"github.com/corl-project/corl/internal/narrow"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestBF16RoundNearestEven: rounding keeps the top 16 bits, to nearest,
// ties to even, carrying into the exponent; NaNs stay NaNs.
func TestBF16RoundNearestEven(t *testing.T) {
	for _, c := range []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81}, // above the tie
		{0x3f807fff, 0x3f80}, // below it
		{0xbf80c000, 0xbf81}, // negative
		{0x7f7fffff, 0x7f80}, // largest float32 rounds to infinity
		{0x7f800000, 0x7f80}, // infinity
		{0x00000001, 0x0000}, // smallest subnormal rounds to zero
		{0x80000000, 0x8000}, // -0
	} {
		if got := narrow.BF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("narrow.BF16(%#08x) = %#04x; want %#04x", c.in, got, c.want)
		}
	}
	if h := narrow.BF16(float32(math.NaN())); !math.IsNaN(float64(narrow.FromBF16(h))) {
		t.Errorf("NaN rounds to %#04x, not a NaN", h)
	}
}

// TestBF16FrozenMatchesRoundedWeights: a matmul whose weight is frozen as
// bfloat16 gives the bits of the float32 matmul over the weight rounded to
// bfloat16, for every row count (the one-row, four-row and twelve-row
// kernels, alone and in edge panels) and shapes that span K and N blocks;
// at one and two threads; and the frozen float32 weights nested inside
// the bf16 freeze compute in float32.
func TestBF16FrozenMatchesRoundedWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, sz := range [][3]int{{1, 7, 5}, {1, 256, 128}, {3, 300, 260}, {5, 513, 33}, {12, 256, 64}, {13, 257, 4100}, {40, 600, 200}} {
		N, C, OC := sz[0], sz[1], sz[2]
		params := make([]float32, 3+OC*C)
		for i := range params {
			params[i] = (rng.Float32()*2 - 1) * 0.1
		}
		rounded := make([]float32, len(params))
		for i, v := range params {
			rounded[i] = narrow.FromBF16(narrow.BF16(v))
		}
		x := make([]float32, N*C)
		for i := range x {
			x[i] = rng.Float32()*2 - 1
		}
		want := make([]float32, N*OC)
		New(1).MatMulForward(Wrap(want), Wrap(x), Wrap(rounded).Slice(3, OC*C), nil, N, C, OC)
		full := make([]float32, N*OC)
		New(1).MatMulForward(Wrap(full), Wrap(x), Wrap(params).Slice(3, OC*C), nil, N, C, OC)
		for _, threads := range []int{1, 2} {
			be := New(threads)
			pb := Wrap(params)
			release := be.FreezeWeightsBF16(pb)
			for rep := 0; rep < 2; rep++ { // packs, then reuses
				got := make([]float32, N*OC)
				be.MatMulForward(Wrap(got), Wrap(x), pb.Slice(3, OC*C), nil, N, C, OC)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v, %d threads, rep %d: element %d: bf16 %v, float32 of rounded weights %v", sz, threads, rep, i, got[i], want[i])
					}
				}
			}
			inner := be.FreezeWeights(pb)
			got := make([]float32, N*OC)
			be.MatMulForward(Wrap(got), Wrap(x), pb.Slice(3, OC*C), nil, N, C, OC)
			for i := range got {
				if got[i] != full[i] {
					t.Fatalf("%v: a float32 freeze inside the bf16 one: element %d is %v; float32 gives %v", sz, i, got[i], full[i])
				}
			}
			inner()
			release()
		}
	}
}

// TestBF16PanelsOnEveryKernel: the bf16 freeze gives the same bits with the
// AVX-512 kernels (bfloat16 panels) and with the AVX2 ones (float32 panels
// of the rounded weights), as float32 matmuls do on the two (the portable
// kernel rounds each product: other bits, as for float32).
func TestBF16PanelsOnEveryKernel(t *testing.T) {
	if SetKernel("avx512") != nil {
		t.Skip("this CPU has no AVX-512: only float32 panels run here")
	}
	defer SetKernel("")
	rng := rand.New(rand.NewPCG(9, 10))
	N, C, OC := 7, 300, 170
	params, x := randSlice(rng, OC*C), randSlice(rng, N*C)
	run := func(kernel string) []float32 {
		if err := SetKernel(kernel); err != nil {
			t.Skip(err)
		}
		be := New(2)
		defer be.FreezeWeightsBF16(Wrap(params))()
		out := make([]float32, N*OC)
		be.MatMulForward(Wrap(out), Wrap(x), Wrap(params), nil, N, C, OC)
		return out
	}
	want, got := run("avx512"), run("avx2")
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("avx2: element %d is %v; avx512's bfloat16 panels give %v", i, got[i], want[i])
		}
	}
}

// TestNestedFreezeSharesPacking: a freeze of the same weights inside one
// still held packs nothing again (the inner freezes find the outer one's
// packing, and keep it for the next), gives the float32 bits; a bf16 freeze
// in between decides until it is released, and the outer freeze's
// packing is gone with it: a weight changed after it is seen.
func TestNestedFreezeSharesPacking(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	N, C, OC := 3, 96, 40
	params, x := randSlice(rng, OC*C), randSlice(rng, N*C)
	pb := Wrap(params)
	matmul := func(be *Backend) []float32 {
		got := make([]float32, N*OC)
		be.MatMulForward(Wrap(got), Wrap(x), pb, nil, N, C, OC)
		return got
	}
	same := func(what string, got, want []float32) {
		t.Helper()
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: element %d is %v, want %v", what, i, got[i], want[i])
			}
		}
	}
	be := New(2)
	full := matmul(be)
	outer := be.FreezeWeights(pb)
	matmul(be)
	if len(be.frozen) != 1 || len(be.frozen[0].packs) != 1 {
		t.Fatalf("after the outer freeze's first matmul: %d regions, want 1 holding 1 packing", len(be.frozen))
	}
	key := packKey{uintptr(unsafe.Pointer(&params[0])), C, OC}
	packed := be.frozen[0].packs[key]
	for run := 0; run < 2; run++ {
		inner := be.FreezeWeights(pb)
		same("inside a nested freeze", matmul(be), full)
		if top := be.frozen[len(be.frozen)-1]; top.packs[key] != packed {
			t.Fatalf("run %d: the nested freeze packed the weight again", run)
		}
		inner()
		if len(be.frozen) != 1 || be.frozen[0].packs[key] != packed {
			t.Fatalf("run %d: the nested freeze took the outer one's packing with it", run)
		}
	}
	rounded := make([]float32, len(params))
	for i, v := range params {
		rounded[i] = narrow.FromBF16(narrow.BF16(v))
	}
	want := make([]float32, N*OC)
	New(1).MatMulForward(Wrap(want), Wrap(x), Wrap(rounded), nil, N, C, OC)
	bf := be.FreezeWeightsBF16(pb)
	inner := be.FreezeWeights(pb)
	same("float32 freeze inside the bf16 one", matmul(be), full)
	inner()
	same("the bf16 freeze after the float32 one inside it ended", matmul(be), want)
	bf()
	same("the outer float32 freeze again", matmul(be), full)
	outer()
	params[0] += 1
	fresh := New(1)
	same("after every release, a changed weight", matmul(be), matmul(fresh))
}
