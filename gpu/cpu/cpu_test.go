package cpu_test

import (
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/gpu/gputest"
)

func TestConformance(t *testing.T)           { gputest.RunAll(t, cpu.New(0)) }
func TestConformanceOneThread(t *testing.T)  { gputest.RunAll(t, cpu.New(1)) }
func TestConformanceOddThreads(t *testing.T) { gputest.RunAll(t, cpu.New(3)) }

// withKernel runs fn with the named micro-kernel forced (skipping when the
// CPU lacks it) and restores the default.
func withKernel(t *testing.T, name string, fn func()) {
	if err := cpu.SetKernel(name); err != nil {
		t.Skip(err)
	}
	defer cpu.SetKernel("")
	fn()
}

// The AVX2 and portable micro-kernels through the same suite: a machine
// without AVX-512 runs them.
func TestConformanceAVX2(t *testing.T) {
	withKernel(t, "avx2", func() { gputest.RunAll(t, cpu.New(0)) })
}

func TestConformanceGoKernel(t *testing.T) {
	withKernel(t, "go", func() { gputest.RunAll(t, cpu.New(2)) })
}
