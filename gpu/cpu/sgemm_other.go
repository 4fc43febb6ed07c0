//go:build (!amd64 && !arm64) || purego

package cpu

import "fmt"

func kern12x32(kb int, a, b, c []float32, ldc int) { kern12x32Go(kb, a, b, c, ldc) }

func geluFwdVec(out, inp []float32) int                     { return 0 }
func geluBwdVec(dinp, dout, inp []float32) int              { return 0 }
func swigluFwdVec(out, gate, up []float32) int              { return 0 }
func swigluBwdVec(dgate, dup, dout, gate, up []float32) int { return 0 }
func dotVec(a, b []float32) (float32, int)                  { return 0, 0 }
func axpyVec(y []float32, alpha float32, x []float32) int   { return 0 }

// SetKernel selects the micro-kernel; off amd64 (or with purego) there is
// only "go".
func SetKernel(name string) error {
	if name != "" && name != "go" {
		return fmt.Errorf("CORL_CPU_KERNEL=%q: only the portable go kernel exists on this build", name)
	}
	return nil
}

func attnScores(out, q, k []float32, stride int) bool { return false }
func attnMix(out, p, v []float32, stride int) bool    { return false }
