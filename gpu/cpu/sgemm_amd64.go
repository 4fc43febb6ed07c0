//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"os"

	"golang.org/x/sys/cpu"
)

//go:noescape
func kern12x32AVX512(kb int, a, b, c *float32, ldc int, set bool)

//go:noescape
func kern6x16AVX2(kb int, a, b, c *float32, ldc int, set bool)

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
// B panel to the 12x32 tile of c with row stride ldc; with set, the tile is
// set to the product instead (the bits of adding it to zeros).
func kern12x32(kb int, a, b, c []float32, ldc int, set bool) {
	if useAVX512 || useAVX2 {
		_ = a[kb*mr-1]
		_ = b[kb*nr-1]
		_ = c[(mr-1)*ldc+nr-1]
	}
	switch {
	case useAVX512:
		kern12x32AVX512(kb, &a[0], &b[0], &c[0], ldc, set)
	case useAVX2:
		kern6x16AVX2(kb, &a[0], &b[0], &c[0], ldc, set)
		kern6x16AVX2(kb, &a[0], &b[16], &c[16], ldc, set)
		kern6x16AVX2(kb, &a[6], &b[0], &c[6*ldc], ldc, set)
		kern6x16AVX2(kb, &a[6], &b[16], &c[6*ldc+16], ldc, set)
	default:
		if set { // the portable kernel only adds
			clearRows(c, ldc, mr, nr)
		}
		kern12x32Go(kb, a, b, c, ldc)
	}
}

//go:noescape
func kern4x32AVX512(kb int, a, b, c *float32, ldc int)

//go:noescape
func kern1x128AVX512(kb int, a, b *float32, pstride int, c *float32)

// rowKernel says whether kern1x128 runs here (AVX-512).
func rowKernel() bool { return useAVX512 }

// kern1x128 adds one packed A row (a[p*mr]) times the four packed B panels
// from b (each nr x kb, ps values apart) to c's 4*nr values, with the bits
// kernEdge gives the row: for A blocks of fewer than four rows.
func kern1x128(kb int, a, b []float32, ps int, c []float32) {
	_ = a[(kb-1)*mr]
	_ = b[3*ps+nr*kb-1]
	_ = c[4*nr-1]
	kern1x128AVX512(kb, &a[0], &b[0], ps*4, &c[0])
}

// kernEdge is kern12x32 for an edge panel whose first mh rows and nw
// columns are real (the rest zero padding) into the mr x nr tile: only the
// row groups holding real rows run (four rows at a time with AVX-512, six
// with AVX2, whose right sixteen columns run only when real), each row
// with the bits the whole kernel gives it.
func kernEdge(kb, mh, nw int, a, b []float32, tile *[mr * nr]float32) {
	_ = a[kb*mr-1]
	_ = b[kb*nr-1]
	switch {
	case useAVX512:
		for i := 0; i < mh; i += 4 {
			kern4x32AVX512(kb, &a[i], &b[0], &tile[i*nr], nr)
		}
	case useAVX2:
		for i := 0; i < mh; i += 6 {
			kern6x16AVX2(kb, &a[i], &b[0], &tile[i*nr], nr, false)
			if nw > 16 {
				kern6x16AVX2(kb, &a[i], &b[16], &tile[i*nr+16], nr, false)
			}
		}
	default:
		kern12x32Go(kb, a, b, tile[:], nr)
	}
}

//go:noescape
func packRowsAVX512(a *float32, lda, kb, rows int, dst *float32, ldd int)

//go:noescape
func packRowsAVX2(a *float32, lda, kb, rows int, dst *float32, ldd int)

// packRowsVec transposes the first columns of rows rows of a (row stride
// lda) into dst, dst[p*ldd+i] = a[i*lda+p], as packA does for a full panel
// (rows = ldd = mr) and packB for a transposed b (rows <= ldd = nr): the
// largest multiple of 16 of kb with AVX-512, of 8 with AVX2. It returns
// how many columns it did; rows must be a multiple of 4.
func packRowsVec(a []float32, lda, kb, rows int, dst []float32, ldd int) int {
	n := kb &^ 15
	if !useAVX512 {
		n = kb &^ 7
	}
	if !(useAVX512 || useAVX2) || n == 0 || rows%4 != 0 || rows == 0 {
		return 0
	}
	_, _ = a[(rows-1)*lda+n-1], dst[(n-1)*ldd+rows-1]
	if !useAVX512 {
		packRowsAVX2(&a[0], lda, n, rows, &dst[0], ldd)
		return n
	}
	packRowsAVX512(&a[0], lda, n, rows, &dst[0], ldd)
	return n
}

//go:noescape
func kern12x32BF16AVX512(kb int, a *float32, b *uint16, c *float32, ldc int, set bool)

//go:noescape
func kern4x32BF16AVX512(kb int, a *float32, b *uint16, c *float32, ldc int)

//go:noescape
func kern1x128BF16AVX512(kb int, a *float32, b *uint16, pstride int, c *float32)

// bf16Panels says whether the kernels read bfloat16 B panels here
// (AVX-512); elsewhere a bf16 freeze packs float32 panels of the rounded
// weights, which give the same bits.
func bf16Panels() bool { return useAVX512 }

// kern12x32H is kern12x32 over a bfloat16 B panel.
func kern12x32H(kb int, a []float32, b []uint16, c []float32, ldc int, set bool) {
	_ = a[kb*mr-1]
	_ = b[kb*nr-1]
	_ = c[(mr-1)*ldc+nr-1]
	kern12x32BF16AVX512(kb, &a[0], &b[0], &c[0], ldc, set)
}

// kern1x128H is kern1x128 over four bfloat16 B panels.
func kern1x128H(kb int, a []float32, b []uint16, ps int, c []float32) {
	_ = a[(kb-1)*mr]
	_ = b[3*ps+nr*kb-1]
	_ = c[4*nr-1]
	kern1x128BF16AVX512(kb, &a[0], &b[0], ps*2, &c[0])
}

// kernEdgeH is kernEdge over a bfloat16 B panel.
func kernEdgeH(kb, mh int, a []float32, b []uint16, tile *[mr * nr]float32) {
	_ = a[kb*mr-1]
	_ = b[kb*nr-1]
	for i := 0; i < mh; i += 4 {
		kern4x32BF16AVX512(kb, &a[i], &b[0], &tile[i*nr], nr)
	}
}

//go:noescape
func kern12x16mAVX512(kb int, a, b, c *float32, ldc int, set bool, mask uint16)

//go:noescape
func kern12x32mAVX512(kb int, a, b, c *float32, ldc int, set bool, mask uint16)

// kernNarrow computes an edge panel of twelve real rows and nw < nr real
// columns (attention's heads of 16 or 24, a vocabulary's last panel)
// straight into c (row stride ldc), with the bits the edge path, kernEdge
// into a cleared tile then added to c, writes there; it reports whether
// it could (AVX-512 only).
func kernNarrow(kb, nw int, a, b, c []float32, ldc int, set bool) bool {
	if !useAVX512 {
		return false
	}
	_ = a[kb*mr-1]
	_ = b[kb*nr-1]
	_ = c[(mr-1)*ldc+nw-1]
	if nw <= 16 {
		kern12x16mAVX512(kb, &a[0], &b[0], &c[0], ldc, set, uint16(1<<nw-1))
	} else {
		kern12x32mAVX512(kb, &a[0], &b[0], &c[0], ldc, set, uint16(1<<(nw-16)-1))
	}
	return true
}
