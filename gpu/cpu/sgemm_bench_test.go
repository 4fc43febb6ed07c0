package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/corl-project/corl/gpu"
)

// BenchmarkGemm reports GFLOP/s of the blocked GEMM at shapes the models use.
func BenchmarkGemm(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, sh := range []struct {
		name    string
		M, N, K int
		tA, tB  bool
	}{
		{"square512", 512, 512, 512, false, false},
		{"square1024", 1024, 1024, 1024, false, false},
		{"gpt2-qkv-fwd", 256, 2304, 768, false, true},
		{"gpt2-fc-dw", 3072, 768, 256, true, false},
		{"gpt2-lmhead-fwd", 256, 50257, 768, false, true},
		{"small-qkv-fwd", 1024, 384, 128, false, true},
	} {
		a, bb := randSlice(r, sh.M*sh.K), randSlice(r, sh.K*sh.N)
		c := make([]float32, sh.M*sh.N)
		lda, ldb := sh.K, sh.N
		if sh.tA {
			lda = sh.M
		}
		if sh.tB {
			ldb = sh.K
		}
		be := New(0)
		b.Run(fmt.Sprintf("%s/%s", sh.name, kernelName), func(b *testing.B) {
			for b.Loop() {
				be.gemm(sh.tA, sh.tB, sh.M, sh.N, sh.K, a, lda, bb, ldb, c, sh.N, false)
			}
			b.ReportMetric(2*float64(sh.M)*float64(sh.N)*float64(sh.K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkFrozenDecode reports the weight bytes read per second by a
// decoding step's matmuls against frozen weights (float32 and bfloat16),
// over 48 layers' worth of 768 x 2048 weights, more than the last-level
// cache holds, at a few sequences.
func BenchmarkFrozenDecode(b *testing.B) {
	const C, OC, layers = 768, 2048, 48
	r := rand.New(rand.NewPCG(2, 2))
	params := randSlice(r, layers*C*OC)
	for _, bf16 := range []bool{false, true} {
		for _, M := range []int{1, 4, 16} {
			be := New(1)
			var release func()
			if bf16 {
				release = be.FreezeWeightsBF16(Wrap(params))
			} else {
				release = be.FreezeWeights(Wrap(params))
			}
			x, out := Wrap(randSlice(r, M*C)), Wrap(make([]float32, M*OC))
			step := func() {
				for l := 0; l < layers; l++ {
					be.MatMulForward(out, x, Wrap(params).Slice(l*C*OC, C*OC), nil, M, C, OC)
				}
			}
			step() // packs
			bytes := 4.0
			if bf16 {
				bytes = 2
			}
			b.Run(fmt.Sprintf("bf16=%v/M=%d", bf16, M), func(b *testing.B) {
				for b.Loop() {
					step()
				}
				b.ReportMetric(bytes*layers*C*OC*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
			release()
		}
	}
}

// BenchmarkPackB reports the bytes per second packB moves for a 256-deep
// panel of 32 columns of a 768-wide op(b), stored as is and transposed (a
// weight stored output-major, as MatMulForward reads it).
func BenchmarkPackB(b *testing.B) {
	const K, N = 768, 768
	r := rand.New(rand.NewPCG(3, 3))
	src := randSlice(r, K*N)
	dst := make([]float32, kc*nr)
	for _, trans := range []bool{false, true} {
		b.Run(fmt.Sprintf("trans=%v/%s", trans, kernelName), func(b *testing.B) {
			for b.Loop() {
				for jp := 0; jp < N/nr; jp++ {
					packB(trans, src, N, 0, kc, jp*nr, nr, dst)
				}
			}
			b.ReportMetric(4*kc*N*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkDecodeAttention is one decoding step's attention for one layer
// of the llama 6 x 256 (4 heads of 64, 96 keys a row), the rows read in
// the kernels' order ("cached") or front to back first ("streamed"), over
// one sequence's rows (in L2 after the first pass) and over 1,536
// sequences' (144 MB, from memory).
func BenchmarkDecodeAttention(b *testing.B) {
	const hs, nh, tk, tcap = 64, 4, 96, 128
	const C = nh * hs
	for _, seqs := range []int{1, 1536} {
		for _, stream := range []bool{false, true} {
			name := fmt.Sprintf("seqs=%d/cached", seqs)
			if stream {
				name = fmt.Sprintf("seqs=%d/streamed", seqs)
			}
			b.Run(name, func(b *testing.B) {
				if !attnRows(hs) {
					b.Skip("no all-heads attention kernel on this CPU")
				}
				r := rand.New(rand.NewPCG(1, 2))
				s := gpu.AttnShape{B: 1, Tq: 1, Tk: tcap, Tcap: tcap, NH: nh, NKV: nh, HS: hs}
				k, v := randSlice(r, seqs*tcap*C), randSlice(r, seqs*tcap*C)
				q, out, p := randSlice(r, C), make([]float32, C), make([]float32, nh*tcap)
				b.SetBytes(int64(seqs * tk * C * 4 * 2))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for sq := 0; sq < seqs; sq++ {
						attendRowsAllHeads(out, p, q, k[sq*tcap*C:], v[sq*tcap*C:], s, tk, C, C, 0.125, stream)
					}
				}
			})
		}
	}
}
