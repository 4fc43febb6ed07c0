// Package safetensors reads and writes the safetensors format: an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype, shape
// and byte range, then the raw data. The parser treats its input as hostile:
// every length, range and shape is checked (overflow included) before any
// data is touched, and tensors may neither overlap nor leave holes.
package safetensors
