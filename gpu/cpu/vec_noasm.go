//go:build !amd64 || purego

package cpu

// Builds without the amd64 assembly have no vector versions of these: the
// callers' Go loops do all the work.

func geluFwdVec(out, inp []float32) int                           { return 0 }
func geluBwdVec(dinp, dout, inp []float32) int                    { return 0 }
func swigluFwdVec(out, gate, up []float32) int                    { return 0 }
func swigluBwdVec(dgate, dup, dout, gate, up []float32) int       { return 0 }
func dotVec(a, b []float32) (float32, int)                        { return 0, 0 }
func axpyVec(y []float32, alpha float32, x []float32) int         { return 0 }
func sumSquaresVec(x []float32, lanes *[8]float64) int            { return 0 }
func scaleRowVec(dst, x, w []float32, r float32) int              { return 0 }
func addVec(out, a, b []float32) int                              { return 0 }
func sumLanesVec(x []float32, lanes *[8]float64) int              { return 0 }
func sqDevLanesVec(x []float32, m float64, lanes *[8]float64) int { return 0 }
func layerNormRowVec(dst, x, w, b []float32, m, r float32) int    { return 0 }

func attnScores(out, q, k []float32, stride int) bool { return false }
func attnMix(out, p, v []float32, stride int) bool    { return false }
func softmaxRowVec(row []float32, scale float32) bool { return false }

func rowLSEVec(row []float32) (maxv float32, lse float64, ok bool)     { return 0, 0, false }
func expScaleVec(dst, row []float32, maxv, logsum, scale float32) bool { return false }

func attnRows(hs int) bool          { return false }
func streamRows(x []float32, n int) {}
func attnRowScores(p, q, k []float32, pstride, kstride, hs, nkv, group, n int) {
	panic("cpu: no all-heads attention kernel")
}
func attnRowMix(out, p, v []float32, pstride, vstride, hs, nkv, group, n int) {
	panic("cpu: no all-heads attention kernel")
}
