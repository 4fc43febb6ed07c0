//go:build amd64 && !purego

package cpu

//go:noescape
func adamwAVX2(p, gr, m, v *float32, n int, c *adamwConsts)

// adamwVec is adamwStep's vector part: the largest multiple of 8 of
// len(p) values with AVX2 (or AVX-512, which has it), returning how many
// it did.
func adamwVec(p, g, m, v []float32, c *adamwConsts) int {
	n := len(p) &^ 7
	if n == 0 || !(useAVX512 || useAVX2) {
		return 0
	}
	_, _, _ = g[n-1], m[n-1], v[n-1]
	adamwAVX2(&p[0], &g[0], &m[0], &v[0], n, c)
	return n
}

//go:noescape
func sumSquares16AVX2(x *float32, chunk int, out *[16]float64)

// sumSquaresChunksVec sets partial[k] to the in-order sum of squares of
// d's chunk k (sumChunk values each) for the largest multiple of sixteen
// of len(partial) chunks, sixteen at once (a float64 lane each, so each
// has its own sum's bits), and returns how many it did.
func sumSquaresChunksVec(partial []float64, d []float32) int {
	n := len(partial) &^ 15
	if n == 0 || !(useAVX512 || useAVX2) {
		return 0
	}
	_ = d[n*sumChunk-1]
	for c := 0; c < n; c += 16 {
		sumSquares16AVX2(&d[c*sumChunk], sumChunk, (*[16]float64)(partial[c:]))
	}
	return n
}
