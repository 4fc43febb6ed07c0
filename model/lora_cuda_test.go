package model

import (
	"testing"

	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/gpu/cuda"
)

// TestLoRAOnEmulatedCUDA is TestLoRAGradientsAreTheMergedModels on the
// CUDA backend over the emulated driver (make cuda-emu): the adapters'
// matmuls, scales and adds are the backend's ordinary kernels, so this
// checks their use (shapes, strides, accumulation) there, on the shapes
// the backend runs (its rotary embeddings are unscaled).
func TestLoRAOnEmulatedCUDA(t *testing.T) {
	be, err := cuda.Open(cuda.Options{Driver: cuda.Emulator(t, ".."), CUBLAS: "off"})
	if err != nil {
		t.Fatal(err)
	}
	loraMatchesMerged(t, func() gpu.Backend { return be }, true)
}
