// Package gpu is corl's compute layer: one small interface, Backend, over device
// memory and the operations a decoder-only transformer needs for inference and for
// training (forward and backward), plus AdamW and gradient clipping.
//
// Shape letters used throughout, declared once:
//
//	B  batch            T  time (sequence length)     C  channels (model width)
//	NH query heads      NKV key/value heads (GQA)     HS head size
//	V  vocabulary       OC output channels            N  rows = B*T
//
// Every buffer is a flat float32 array in row-major order. Backward operations
// accumulate into gradient buffers with +=, so a gradient is zeroed once per step
// and may receive contributions from several paths (residuals, tied embeddings).
//
// Implementations: gpu/cpu (pure Go, the reference) and gpu/cuda. All of them pass
// the conformance suite in gpu/gputest. Results must not depend on the number of
// threads: every reduction runs over fixed-size chunks combined in a fixed order.
package gpu
