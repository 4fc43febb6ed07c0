//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"os"

	"golang.org/x/sys/cpu"
)

//go:noescape
func kern12x32AVX512(kb int, a, b, c *float32, ldc int)

//go:noescape
func kern6x16AVX2(kb int, a, b, c *float32, ldc int)

// The micro-kernel in use: AVX-512 where the CPU has it, else AVX2 with
// FMA (most other x86 machines and cloud instances), else portable Go.
// CORL_CPU_KERNEL=avx2 or go forces a slower one (the tests force each
// through the conformance suite).
var useAVX512, useAVX2 bool // set by SetKernel

func init() {
	if err := SetKernel(os.Getenv("CORL_CPU_KERNEL")); err != nil {
		panic(err)
	}
}

// SetKernel selects the micro-kernel: "avx512", "avx2", "go", or "" for the
// best the CPU has. Not safe while a backend computes.
func SetKernel(name string) error {
	has512 := cpu.X86.HasAVX512F
	has2 := cpu.X86.HasAVX2 && cpu.X86.HasFMA
	switch name {
	case "":
		useAVX512, useAVX2 = has512, has2
	case "avx512":
		if !has512 {
			return fmt.Errorf("CORL_CPU_KERNEL=avx512: this CPU has no AVX-512")
		}
		useAVX512, useAVX2 = true, has2
	case "avx2":
		if !has2 {
			return fmt.Errorf("CORL_CPU_KERNEL=avx2: this CPU has no AVX2 with FMA")
		}
		useAVX512, useAVX2 = false, true
	case "go":
		useAVX512, useAVX2 = false, false
	default:
		return fmt.Errorf("CORL_CPU_KERNEL=%q: want avx512, avx2 or go", name)
	}
	switch {
	case useAVX512:
		kernelName = "avx512"
	case useAVX2:
		kernelName = "avx2"
	default:
		kernelName = "go"
	}
	return nil
}

// kern12x32 adds the product of a packed 12-row A panel and a packed 32-column
// B panel to the 12x32 tile of c with row stride ldc.
func kern12x32(kb int, a, b, c []float32, ldc int) {
	if useAVX512 || useAVX2 {
		_ = a[kb*mr-1]
		_ = b[kb*nr-1]
		_ = c[(mr-1)*ldc+nr-1]
	}
	switch {
	case useAVX512:
		kern12x32AVX512(kb, &a[0], &b[0], &c[0], ldc)
	case useAVX2:
		kern6x16AVX2(kb, &a[0], &b[0], &c[0], ldc)
		kern6x16AVX2(kb, &a[0], &b[16], &c[16], ldc)
		kern6x16AVX2(kb, &a[6], &b[0], &c[6*ldc], ldc)
		kern6x16AVX2(kb, &a[6], &b[16], &c[6*ldc+16], ldc)
	default:
		kern12x32Go(kb, a, b, c, ldc)
	}
}
