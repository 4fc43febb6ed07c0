//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

//go:noescape
func kern12x32AVX512(kb int, a, b, c *float32, ldc int)

var useAVX512 = cpu.X86.HasAVX512F

func init() {
	if useAVX512 {
		kernelName = "avx512"
	}
}

// kern12x32 adds the product of a packed 12-row A panel and a packed 32-column
// B panel to the 12x32 tile of c with row stride ldc.
func kern12x32(kb int, a, b, c []float32, ldc int) {
	if useAVX512 {
		_ = a[kb*mr-1]
		_ = b[kb*nr-1]
		_ = c[(mr-1)*ldc+nr-1]
		kern12x32AVX512(kb, &a[0], &b[0], &c[0], ldc)
		return
	}
	kern12x32Go(kb, a, b, c, ldc)
}
