// Package fastexp computes exp over float64 slices with math.Exp's bits,
// eight at a time on AVX-512, four on AVX2. Sampling takes one exp per
// vocabulary entry for every generated token, so this is a large share of
// a small model's decoding; it is written here, in assembly, because no
// library gives math.Exp's exact results in vector form, and a sampled
// token must not depend on whether the machine has the vector unit.
package fastexp
