//go:build !amd64 || purego

package cpu

func kern12x32(kb int, a, b, c []float32, ldc int) { kern12x32Go(kb, a, b, c, ldc) }
