//go:build !amd64 || purego

package cpu

// bf16Panels: without the AVX-512 kernels the matmuls take float32 panels
// only, so a bf16 freeze packs the rounded weights as float32 (the same
// bits, none of the bytes saved).
func bf16Panels() bool { return false }

func kern12x32H(kb int, a []float32, b []uint16, c []float32, ldc int, set bool) {
	panic("cpu: bfloat16 panels without AVX-512")
}

func kern1x128H(kb int, a []float32, b []uint16, ps int, c []float32) {
	panic("cpu: bfloat16 panels without AVX-512")
}

func kernEdgeH(kb, mh int, a []float32, b []uint16, tile *[mr * nr]float32) {
	panic("cpu: bfloat16 panels without AVX-512")
}
