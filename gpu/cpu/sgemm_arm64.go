//go:build arm64 && !purego

package cpu

import (
	"fmt"
	"os"
)

//go:noescape
func kern6x16NEON(kb int, a, b, c *float32, ldc int)

// useNEON selects the NEON micro-kernel (every arm64 CPU has NEON: AWS
// Graviton, Apple silicon); CORL_CPU_KERNEL=go forces the portable one.
var useNEON = true

func init() {
	if err := SetKernel(os.Getenv("CORL_CPU_KERNEL")); err != nil {
		panic(err)
	}
}

// SetKernel selects the micro-kernel: "neon", "go", or "" for NEON.
func SetKernel(name string) error {
	switch name {
	case "", "neon":
		useNEON, kernelName = true, "neon"
	case "go":
		useNEON, kernelName = false, "go"
	default:
		return fmt.Errorf("CORL_CPU_KERNEL=%q: want neon or go on arm64", name)
	}
	return nil
}

// kern12x32 adds the product of a packed 12-row A panel and a packed 32-column
// B panel to the 12x32 tile of c with row stride ldc; with set, the tile is
// cleared first.
func kern12x32(kb int, a, b, c []float32, ldc int, set bool) {
	if set {
		clearRows(c, ldc, mr, nr)
	}
	if !useNEON {
		kern12x32Go(kb, a, b, c, ldc)
		return
	}
	_ = a[kb*mr-1]
	_ = b[kb*nr-1]
	_ = c[(mr-1)*ldc+nr-1]
	kern6x16NEON(kb, &a[0], &b[0], &c[0], ldc)
	kern6x16NEON(kb, &a[0], &b[16], &c[16], ldc)
	kern6x16NEON(kb, &a[6], &b[0], &c[6*ldc], ldc)
	kern6x16NEON(kb, &a[6], &b[16], &c[6*ldc+16], ldc)
}

// kernEdge is kern12x32 for an edge panel whose first mh rows and nw
// columns are real (the rest zero padding) into the mr x nr tile: only the
// six-row halves holding real rows run, their right sixteen columns only
// when real, each row with the bits the whole kernel gives it.
func kernEdge(kb, mh, nw int, a, b []float32, tile *[mr * nr]float32) {
	if !useNEON {
		kern12x32Go(kb, a, b, tile[:], nr)
		return
	}
	_ = a[kb*mr-1]
	_ = b[kb*nr-1]
	for i := 0; i < mh; i += 6 {
		kern6x16NEON(kb, &a[i], &b[0], &tile[i*nr], nr)
		if nw > 16 {
			kern6x16NEON(kb, &a[i], &b[16], &tile[i*nr+16], nr)
		}
	}
}

// packRowsVec: no vector packing here (packA's and packB's loops do it all).
func packRowsVec(a []float32, lda, kb, rows int, dst []float32, ldd int) int { return 0 }

// rowKernel: no one-row kernel on this build (kernEdge does every row).
func rowKernel() bool { return false }

func kern1x128(kb int, a, b []float32, ps int, c []float32) { panic("cpu: kern1x128 without AVX-512") }
