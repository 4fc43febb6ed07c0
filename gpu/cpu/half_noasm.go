//go:build !amd64 || purego

package cpu

// Builds without the amd64 assembly run the binary16 cache in Go
// (half.go's portable loops), with the same bits as the vector kernels
// would give over dot and axpy.

func storeHalfVec(dst []uint16, src []float32) int { return 0 }
func widenHalfVec(dst []float32, src []uint16) int { return 0 }
func halfRows(hs int) bool                         { return false }
func halfVec() bool                                { return false }

func halfScores4(p, q []float32, k []uint16, pstride, hs, group, n int) int { return 0 }
func halfMix4(out, p []float32, v []uint16, pstride, hs, n int, kvoff *[4]int) {
	panic("gpu: no binary16 kernels in this build")
}
