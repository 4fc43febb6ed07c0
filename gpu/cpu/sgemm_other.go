//go:build (!amd64 && !arm64) || purego

package cpu

import "fmt"

func kern12x32(kb int, a, b, c []float32, ldc int) { kern12x32Go(kb, a, b, c, ldc) }

// SetKernel selects the micro-kernel; off amd64 (or with purego) there is
// only "go".
func SetKernel(name string) error {
	if name != "" && name != "go" {
		return fmt.Errorf("CORL_CPU_KERNEL=%q: only the portable go kernel exists on this build", name)
	}
	return nil
}
