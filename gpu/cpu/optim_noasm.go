//go:build !amd64 || purego

package cpu

func adamwVec(p, g, m, v []float32, c *adamwConsts) int { return 0 }

func sumSquaresChunksVec(partial []float64, d []float32) int { return 0 }
