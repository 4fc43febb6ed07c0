//go:build amd64 && !purego

package cpu

import "math"

//go:noescape
func geluFwdAVX512(out, inp *float32, n int)

//go:noescape
func geluBwdAVX512(dinp, dout, inp *float32, n int)

//go:noescape
func swigluFwdAVX512(out, gate, up *float32, n int)

//go:noescape
func swigluBwdAVX512(dgate, dup, dout, gate, up *float32, n int)

//go:noescape
func geluFwdAVX2(out, inp *float32, n int)

//go:noescape
func geluBwdAVX2(dinp, dout, inp *float32, n int)

//go:noescape
func swigluFwdAVX2(out, gate, up *float32, n int)

//go:noescape
func swigluBwdAVX2(dgate, dup, dout, gate, up *float32, n int)

// The vector kernels take the largest multiple of 16 and return how many
// elements they did; the Go loops finish the rest. The AVX2 kernels repeat
// the AVX-512 ones' arithmetic eight lanes at a time, so both give the same
// bits and split a row at the same place.

func geluFwdVec(out, inp []float32) int {
	n := len(out) &^ 15
	if !(useAVX512 || useAVX2) || n == 0 {
		return 0
	}
	_ = inp[n-1]
	if !useAVX512 {
		geluFwdAVX2(&out[0], &inp[0], n)
		return n
	}
	geluFwdAVX512(&out[0], &inp[0], n)
	return n
}

func geluBwdVec(dinp, dout, inp []float32) int {
	n := len(dinp) &^ 15
	if !(useAVX512 || useAVX2) || n == 0 {
		return 0
	}
	_, _ = dout[n-1], inp[n-1]
	if !useAVX512 {
		geluBwdAVX2(&dinp[0], &dout[0], &inp[0], n)
		return n
	}
	geluBwdAVX512(&dinp[0], &dout[0], &inp[0], n)
	return n
}

func swigluFwdVec(out, gate, up []float32) int {
	n := len(out) &^ 15
	if !(useAVX512 || useAVX2) || n == 0 {
		return 0
	}
	_, _ = gate[n-1], up[n-1]
	if !useAVX512 {
		swigluFwdAVX2(&out[0], &gate[0], &up[0], n)
		return n
	}
	swigluFwdAVX512(&out[0], &gate[0], &up[0], n)
	return n
}

func swigluBwdVec(dgate, dup, dout, gate, up []float32) int {
	n := len(dout) &^ 15
	if !(useAVX512 || useAVX2) || n == 0 {
		return 0
	}
	_, _, _, _ = dgate[n-1], dup[n-1], gate[n-1], up[n-1]
	if !useAVX512 {
		swigluBwdAVX2(&dgate[0], &dup[0], &dout[0], &gate[0], &up[0], n)
		return n
	}
	swigluBwdAVX512(&dgate[0], &dup[0], &dout[0], &gate[0], &up[0], n)
	return n
}

//go:noescape
func dotAVX512(a, b *float32, n int) float32

//go:noescape
func axpyAVX512(y *float32, alpha float32, x *float32, n int)

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func axpyAVX2(y *float32, alpha float32, x *float32, n int)

// dotVec returns the dot product of the first multiple-of-16 elements and how
// many it covered.
func dotVec(a, b []float32) (float32, int) {
	n := len(a) &^ 15
	if !(useAVX512 || useAVX2) || n == 0 {
		return 0, 0
	}
	_ = b[n-1]
	if !useAVX512 {
		return dotAVX2(&a[0], &b[0], n), n
	}
	return dotAVX512(&a[0], &b[0], n), n
}

func axpyVec(y []float32, alpha float32, x []float32) int {
	n := len(y) &^ 15
	if !(useAVX512 || useAVX2) || n == 0 {
		return 0
	}
	_ = x[n-1]
	if !useAVX512 {
		axpyAVX2(&y[0], alpha, &x[0], n)
		return n
	}
	axpyAVX512(&y[0], alpha, &x[0], n)
	return n
}

//go:noescape
func attnScoresAVX512(q, k *float32, kstride, hs, n int, out *float32)

//go:noescape
func attnMixAVX512(out, p, v *float32, vstride, hs, n int)

// attnScores sets out[j] = dot(q, k[j*stride:][:len(q)]) for j < len(out)
// in one call, with dot's bits; false when there is no fused kernel for
// this shape (the caller loops over dot). With AVX2 it is the all-heads row
// kernel for one head.
func attnScores(out, q, k []float32, stride int) bool {
	hs, n := len(q), len(out)
	if !attnRows(hs) || n == 0 {
		return false
	}
	_ = k[(n-1)*stride+hs-1]
	if !useAVX512 {
		attnRowScores(out, q, k, 0, stride, hs, 1, 1, n)
		return true
	}
	attnScoresAVX512(&q[0], &k[0], stride, hs, n, &out[0])
	return true
}

// attnMix adds p[j]*v[j*stride:][:len(out)] to out for j in order, with
// axpy's bits; false when there is no fused kernel for this shape. With
// AVX2 it is the all-heads row kernel for one head.
func attnMix(out, p, v []float32, stride int) bool {
	hs, n := len(out), len(p)
	if !attnRows(hs) || n == 0 {
		return false
	}
	_ = v[(n-1)*stride+hs-1]
	if !useAVX512 {
		attnRowMix(out, p, v, 0, stride, hs, 1, 1, n)
		return true
	}
	attnMixAVX512(&out[0], &p[0], &v[0], stride, hs, n)
	return true
}

//go:noescape
func softmaxRowAVX512(row *float32, n int, scale float32)

//go:noescape
func softmaxRowAVX2(row *float32, n int, scale float32)

// softmaxRowVec sets row = softmax(scale*row) in one call (exp as the GELU
// kernels compute it, the sum over 16 lanes); false without AVX-512 or
// AVX2 (the caller's Go loop, softmaxRowGo, does it).
func softmaxRowVec(row []float32, scale float32) bool {
	if !(useAVX512 || useAVX2) || len(row) == 0 {
		return false
	}
	if !useAVX512 {
		softmaxRowAVX2(&row[0], len(row), scale)
		return true
	}
	softmaxRowAVX512(&row[0], len(row), scale)
	return true
}

//go:noescape
func attnRowScoresAVX512(q, k *float32, kstride, hs, nkv, group, n int, p *float32, pstride int)

//go:noescape
func attnRowMixAVX512(out, p *float32, pstride int, v *float32, vstride, hs, nkv, group, n int)

//go:noescape
func attnRowScoresAVX2(q, k *float32, kstride, hs, nkv, group, n int, p *float32, pstride int)

//go:noescape
func attnRowScores4AVX2(q, k *float32, kstride, hs, nkv, group, n int, p *float32, pstride int)

//go:noescape
func attnRowMixAVX2(out, p *float32, pstride int, v *float32, vstride, hs, nkv, group, n int)

//go:noescape
func attnMix4AVX2(out, p *float32, pstride int, v *float32, vstride, hs, n int, kvoff *[4]int)

// attnRows reports whether the all-heads row kernels (attnRowScores,
// attnRowMix) run for head size hs.
func attnRows(hs int) bool { return (useAVX512 || useAVX2) && hs > 0 && hs%4 == 0 }

//go:noescape
func attnRowScores16AVX512(q, k *float32, kstride, hs, nkv, group, n int, p *float32, pstride int)

// attnRowScores sets p[h*pstride+j] = dot(q[h*hs:][:hs], k[j*kstride+kvh*hs:][:hs])
// for the nkv*group query heads h (kvh = h/group) and keys j < n, each with
// dot's bits, reading each key row once for every head (sixteen keys at a
// time with AVX-512, four with AVX2, the rest one by one); callers check
// attnRows first.
func attnRowScores(p, q, k []float32, pstride, kstride, hs, nkv, group, n int) {
	nh := nkv * group
	_, _, _ = q[nh*hs-1], k[(n-1)*kstride+nkv*hs-1], p[(nh-1)*pstride+n-1]
	j := 0
	if !useAVX512 {
		if n >= 4 {
			j = n &^ 3
			attnRowScores4AVX2(&q[0], &k[0], kstride, hs, nkv, group, j, &p[0], pstride)
		}
		if j < n {
			attnRowScoresAVX2(&q[0], &k[j*kstride], kstride, hs, nkv, group, n-j, &p[j], pstride)
		}
		return
	}
	if n >= 16 {
		j = n &^ 15
		attnRowScores16AVX512(&q[0], &k[0], kstride, hs, nkv, group, j, &p[0], pstride)
	}
	if j < n {
		attnRowScoresAVX512(&q[0], &k[j*kstride], kstride, hs, nkv, group, n-j, &p[j], pstride)
	}
}

//go:noescape
func attnMix4AVX512(out, p *float32, pstride int, v *float32, vstride, hs, n int, kvoff *[4]int)

// mixKeys is how many keys attnRowMix's four-head kernel takes at a time:
// their value rows stay in cache while it goes through the chunk columns.
const mixKeys = 32

// attnRowMix adds p[h*pstride+j]*v[j*vstride+kvh*hs:][:hs] to out[h*hs:][:hs]
// for every query head h and j < n in order, with axpy's bits, reading each
// value row once for every head; callers check attnRows first. With a head
// size that is a multiple of 16 and heads in fours, four heads' chunks stay
// in registers across a block of keys.
func attnRowMix(out, p, v []float32, pstride, vstride, hs, nkv, group, n int) {
	nh := nkv * group
	_, _, _ = out[nh*hs-1], v[(n-1)*vstride+nkv*hs-1], p[(nh-1)*pstride+n-1]
	if hs%16 != 0 || nh%4 != 0 {
		if !useAVX512 {
			attnRowMixAVX2(&out[0], &p[0], pstride, &v[0], vstride, hs, nkv, group, n)
			return
		}
		attnRowMixAVX512(&out[0], &p[0], pstride, &v[0], vstride, hs, nkv, group, n)
		return
	}
	for h := 0; h < nh; h += 4 {
		var kvoff [4]int
		for i := range kvoff {
			kvoff[i] = (h + i) / group * hs
		}
		for j := 0; j < n; j += mixKeys {
			if !useAVX512 {
				attnMix4AVX2(&out[h*hs], &p[h*pstride+j], pstride, &v[j*vstride], vstride, hs, min(mixKeys, n-j), &kvoff)
				continue
			}
			attnMix4AVX512(&out[h*hs], &p[h*pstride+j], pstride, &v[j*vstride], vstride, hs, min(mixKeys, n-j), &kvoff)
		}
	}
}

//go:noescape
func lseRowAVX512(row *float32, n int) (maxv float32, sum float64)

//go:noescape
func expScaleAVX512(dst, row *float32, n int, maxv, logsum, scale float32)

//go:noescape
func lseRowAVX2(row *float32, n int) (maxv float32, sum float64)

//go:noescape
func expScaleAVX2(dst, row *float32, n int, maxv, logsum, scale float32)

// rowLSEVec is rowLSE at temperature 1 in one call: the maximum, then
// exp(v - max) as the GELU kernels compute it, summed in float64 over 16
// lanes; false without AVX-512 or AVX2.
func rowLSEVec(row []float32) (maxv float32, lse float64, ok bool) {
	if !(useAVX512 || useAVX2) || len(row) == 0 {
		return 0, 0, false
	}
	var sum float64
	if useAVX512 {
		maxv, sum = lseRowAVX512(&row[0], len(row))
	} else {
		maxv, sum = lseRowAVX2(&row[0], len(row))
	}
	return maxv, float64(maxv) + math.Log(sum), true
}

// expScaleVec sets dst = scale * exp((row - maxv) - logsum) (exp as the
// GELU kernels compute it): scale times the softmax of a row whose maximum
// and log-sum-exp are maxv and maxv+logsum, the shift kept in two parts so
// that float32 loses nothing of a large maximum; false without AVX-512 or
// AVX2.
func expScaleVec(dst, row []float32, maxv, logsum, scale float32) bool {
	if !(useAVX512 || useAVX2) || len(row) == 0 {
		return false
	}
	_ = dst[len(row)-1]
	if !useAVX512 {
		expScaleAVX2(&dst[0], &row[0], len(row), maxv, logsum, scale)
		return true
	}
	expScaleAVX512(&dst[0], &row[0], len(row), maxv, logsum, scale)
	return true
}

//go:noescape
func sumSquaresAVX512(x *float32, n int, lanes *[8]float64)

//go:noescape
func scaleRowAVX512(dst, x, w *float32, r float32, n int)

//go:noescape
func addAVX512(out, a, b *float32, n int)

//go:noescape
func sumSquaresAVX2(x *float32, n int, lanes *[8]float64)

//go:noescape
func scaleRowAVX2(dst, x, w *float32, r float32, n int)

//go:noescape
func addAVX2(out, a, b *float32, n int)

//go:noescape
func sumLanesAVX2(x *float32, n int, lanes *[8]float64)

//go:noescape
func sqDevLanesAVX2(x *float32, n int, m float64, lanes *[8]float64)

//go:noescape
func layerNormRowAVX2(dst, x, w, b *float32, m, r float32, n int)

// sumSquaresVec adds x's squares into the eight lanes over the largest
// multiple of 8 (as sumSquares does) and returns how many it took.
func sumSquaresVec(x []float32, lanes *[8]float64) int {
	n := len(x) &^ 7
	if !(useAVX512 || useAVX2) || n == 0 {
		return 0
	}
	if !useAVX512 {
		sumSquaresAVX2(&x[0], n, lanes)
		return n
	}
	sumSquaresAVX512(&x[0], n, lanes)
	return n
}

// scaleRowVec sets dst[i] = x[i]*r*w[i] over the largest multiple of 16
// and returns how many it did.
func scaleRowVec(dst, x, w []float32, r float32) int {
	n := len(dst) &^ 15
	if !(useAVX512 || useAVX2) || n == 0 {
		return 0
	}
	_, _ = x[n-1], w[n-1]
	if !useAVX512 {
		scaleRowAVX2(&dst[0], &x[0], &w[0], r, n)
		return n
	}
	scaleRowAVX512(&dst[0], &x[0], &w[0], r, n)
	return n
}

// addVec sets out[i] = a[i]+b[i] over the largest multiple of 16 and
// returns how many it did.
func addVec(out, a, b []float32) int {
	n := len(out) &^ 15
	if !(useAVX512 || useAVX2) || n == 0 {
		return 0
	}
	_, _ = a[n-1], b[n-1]
	if !useAVX512 {
		addAVX2(&out[0], &a[0], &b[0], n)
		return n
	}
	addAVX512(&out[0], &a[0], &b[0], n)
	return n
}

//go:noescape
func sumLanesAVX512(x *float32, n int, lanes *[8]float64)

//go:noescape
func sqDevLanesAVX512(x *float32, n int, m float64, lanes *[8]float64)

//go:noescape
func layerNormRowAVX512(dst, x, w, b *float32, m, r float32, n int)

// sumLanesVec adds x's elements into the eight lanes over the largest
// multiple of 8 (as sumLanes does) and returns how many it took.
func sumLanesVec(x []float32, lanes *[8]float64) int {
	n := len(x) &^ 7
	if !(useAVX512 || useAVX2) || n == 0 {
		return 0
	}
	if !useAVX512 {
		sumLanesAVX2(&x[0], n, lanes)
		return n
	}
	sumLanesAVX512(&x[0], n, lanes)
	return n
}

// sqDevLanesVec adds the squares of x's deviations from m into the eight
// lanes over the largest multiple of 8 (as sqDevLanes does) and returns how
// many it took.
func sqDevLanesVec(x []float32, m float64, lanes *[8]float64) int {
	n := len(x) &^ 7
	if !(useAVX512 || useAVX2) || n == 0 {
		return 0
	}
	if !useAVX512 {
		sqDevLanesAVX2(&x[0], n, m, lanes)
		return n
	}
	sqDevLanesAVX512(&x[0], n, m, lanes)
	return n
}

// layerNormRowVec sets dst[i] = (x[i]-m)*r*w[i] + b[i] over the largest
// multiple of 16 and returns how many it did.
func layerNormRowVec(dst, x, w, b []float32, m, r float32) int {
	n := len(dst) &^ 15
	if !(useAVX512 || useAVX2) || n == 0 {
		return 0
	}
	_, _, _ = x[n-1], w[n-1], b[n-1]
	if !useAVX512 {
		layerNormRowAVX2(&dst[0], &x[0], &w[0], &b[0], m, r, n)
		return n
	}
	layerNormRowAVX512(&dst[0], &x[0], &w[0], &b[0], m, r, n)
	return n
}

//go:noescape
func streamLines(p *float32, lines int)

// streamRows reads the 64-byte lines of x[:n] in order before a kernel
// reads them in its own order (see streamBytes); it changes nothing.
func streamRows(x []float32, n int) {
	if n >= 16 {
		_ = x[n-1]
		streamLines(&x[0], n/16)
	}
}
