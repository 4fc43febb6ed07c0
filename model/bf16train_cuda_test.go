package model

import (
	"math"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/gpu/cuda"
)

// TestBF16MatmulsOnEmulatedCUDA: mixed-precision training on the CUDA
// backend over the emulated driver, with corl's GEMM kernel and with the
// cuBLAS stand-in's cublasGemmEx, gives the CPU backend's bfloat16
// gradients and log-probs within float32 summation order (1e-4 of the
// largest gradient; the products of rounded operands are exact on both),
// and moves off its own float32 ones.
func TestBF16MatmulsOnEmulatedCUDA(t *testing.T) {
	for _, blas := range []string{"off", ""} {
		for name, cfg := range bf16TrainShapes {
			t.Run(name+"/cublas="+blas, func(t *testing.T) {
				be, err := cuda.Open(cuda.Options{Driver: cuda.Emulator(t, ".."), CUBLAS: blas})
				if err != nil {
					t.Fatal(err)
				}
				_, want, wantLP := bf16Pass(t, cpu.New(2), cfg, true)
				_, got, gotLP := bf16Pass(t, be, cfg, true)
				_, g32, _ := bf16Pass(t, be, cfg, false)
				var top float64
				for _, v := range want {
					top = max(top, math.Abs(float64(v)))
				}
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*top {
						t.Fatalf("gradient %d: %v on CUDA, %v on the CPU (largest %v)", i, got[i], want[i], top)
					}
				}
				for i := range wantLP {
					if d := math.Abs(float64(gotLP[i] - wantLP[i])); d > 1e-4 {
						t.Fatalf("log-prob %d: %v on CUDA, %v on the CPU", i, gotLP[i], wantLP[i])
					}
				}
				if relDiff(got, g32) < 1e-5 {
					t.Fatal("the CUDA backend's bfloat16 gradients are its float32 ones")
				}
			})
		}
	}
}
