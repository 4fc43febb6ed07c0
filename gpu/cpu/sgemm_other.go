//go:build (!amd64 && !arm64) || purego

package cpu

import "fmt"

// kern12x32 adds the product of the panels to the tile of c (row stride
// ldc); with set, the tile is cleared first.
func kern12x32(kb int, a, b, c []float32, ldc int, set bool) {
	if set {
		clearRows(c, ldc, mr, nr)
	}
	kern12x32Go(kb, a, b, c, ldc)
}

// SetKernel selects the micro-kernel; off amd64 (or with purego) there is
// only "go".
func SetKernel(name string) error {
	if name != "" && name != "go" {
		return fmt.Errorf("CORL_CPU_KERNEL=%q: only the portable go kernel exists on this build", name)
	}
	return nil
}

// kernEdge is kern12x32 for an edge panel (the portable kernel computes
// every row).
func kernEdge(kb, mh, nw int, a, b []float32, tile *[mr * nr]float32) {
	kern12x32Go(kb, a, b, tile[:], nr)
}

// packRowsVec: no vector packing here (packA's and packB's loops do it all).
func packRowsVec(a []float32, lda, kb, rows int, dst []float32, ldd int) int { return 0 }

// rowKernel: no one-row kernel on this build (kernEdge does every row).
func rowKernel() bool { return false }

func kern1x128(kb int, a, b []float32, ps int, c []float32) { panic("cpu: kern1x128 without AVX-512") }
