//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

//go:noescape
func storeHalfAVX2(dst *uint16, src *float32, n int)

//go:noescape
func widenHalfAVX2(dst *float32, src *uint16, n int)

//go:noescape
func halfScores4AVX2(q *float32, k *uint16, hs, group, n int, p *float32, pstride int, end *uint16)

//go:noescape
func halfMix4AVX2(out, p *float32, pstride int, v *uint16, vstride, hs, n int, kvoff *[4]int)

// halfVec reports whether the binary16 kernels run: the vector kernels
// are on (SetKernel) and the CPU converts binary16 (F16C).
func halfVec() bool { return (useAVX512 || useAVX2) && cpu.X86.HasF16C }

// storeHalfVec is storeHalfRow's vector part: the largest multiple of 8
// of len(src) values, returning how many it did.
func storeHalfVec(dst []uint16, src []float32) int {
	n := len(src) &^ 7
	if n == 0 || !halfVec() {
		return 0
	}
	_ = dst[n-1]
	storeHalfAVX2(&dst[0], &src[0], n)
	return n
}

// widenHalfVec is widenHalf's vector part: the largest multiple of 8 of
// len(dst) values, returning how many it did.
func widenHalfVec(dst []float32, src []uint16) int {
	n := len(dst) &^ 7
	if n == 0 || !halfVec() {
		return 0
	}
	_ = src[n-1]
	widenHalfAVX2(&dst[0], &src[0], n)
	return n
}

// halfScores4 sets p[h*pstride+j] for the group query heads h and the
// first n&^3 keys of one key/value head (rows back to back at stride hs)
// with dot's bits over the widened keys, and returns how many keys it did;
// callers check halfRows first.
func halfScores4(p, q []float32, k []uint16, pstride, hs, group, n int) int {
	j := n &^ 3
	if j == 0 {
		return 0
	}
	_, _, _ = q[group*hs-1], k[j*hs-1], p[(group-1)*pstride+j-1]
	halfScores4AVX2(&q[0], &k[0], hs, group, j, &p[0], pstride, &k[(j-1)*hs])
	return j
}

// halfMix4 adds p[i*pstride+j]*float32(v[kvoff[i]+j*hs:][:hs]) to
// out[i*hs:][:hs] for four query heads i and j < n in order, with axpy's
// bits; callers check halfRows first.
func halfMix4(out, p []float32, v []uint16, pstride, hs, n int, kvoff *[4]int) {
	_, _ = out[4*hs-1], p[3*pstride+n-1]
	for _, o := range kvoff {
		_ = v[o+n*hs-1]
	}
	halfMix4AVX2(&out[0], &p[0], pstride, &v[0], hs, hs, n, kvoff)
}

// halfRows reports whether a head size takes the binary16 kernels.
func halfRows(hs int) bool { return halfVec() && hs > 0 && hs%16 == 0 }
