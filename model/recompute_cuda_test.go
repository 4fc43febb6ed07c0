package model

import (
	"testing"

	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/gpu/cuda"
)

// TestRecomputeOnEmulatedCUDA: recompute's gradients are the same bits on
// the CUDA backend over the emulated driver (make cuda-emu), where
// training attends in tiles (a log-sum-exp per query kept, recomputed with
// the layer) and, with UntiledAttention, through stored probabilities; on
// the shapes it can run (its rotary embeddings are unscaled).
func TestRecomputeOnEmulatedCUDA(t *testing.T) {
	emu := cuda.Emulator(t, "..")
	be, err := cuda.Open(cuda.Options{Driver: emu, CUBLAS: "off"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gpu.Backend(be).(gpu.FlashAttention); !ok {
		t.Fatal("the CUDA backend has no tiled attention")
	}
	recomputeSameBits(t, func() gpu.Backend { return be }, true)
}

// TestLogitRowsOnEmulatedCUDA is TestLogitRowsKeepTheBits on the CUDA
// backend over the emulated driver.
func TestLogitRowsOnEmulatedCUDA(t *testing.T) {
	be, err := cuda.Open(cuda.Options{Driver: cuda.Emulator(t, ".."), CUBLAS: "off"})
	if err != nil {
		t.Fatal(err)
	}
	logitRowsKeepBits(t, func() gpu.Backend { return be }, true)
}
