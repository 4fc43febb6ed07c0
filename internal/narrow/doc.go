// Package narrow converts float32 to and from the 16-bit formats corl
// stores: IEEE binary16 (F16) and bfloat16 (BF16), both rounded to nearest
// with ties to even, and widened exactly. The CPU backend's caches and
// packed weights and the safetensors files use these one set of rules.
package narrow
