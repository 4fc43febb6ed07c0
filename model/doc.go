// Package model holds corl's decoder-only transformer families on top of
// gpu.Backend: "llama" (RMSNorm, RoPE, SwiGLU, grouped-query attention, optional
// q/k/v bias as in Qwen2, tied or untied embeddings) and "gpt2" (LayerNorm,
// learned positions, GELU, tied embeddings), at any size. Parameters live in one
// device buffer with Hugging Face tensor names, so checkpoints map one to one.
//
// A Model runs the training forward pass over a (B, T) batch, returns the
// log-probability of given target tokens, and back-propagates per-token weights
// on those log-probabilities: that one mechanism serves supervised cross-entropy
// (weight -1/count) and policy-gradient losses (weight = advantage terms).
package model
