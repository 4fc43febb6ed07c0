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

import (
	"fmt"
	"strings"
)

// Families the package implements.
const (
	Llama = "llama"
	GPT2  = "gpt2"
)

// Config describes one model's architecture. JSON names follow Hugging Face
// config.json where one exists.
type Config struct {
	Family     string  `json:"family"`
	Layers     int     `json:"num_hidden_layers"`
	Dim        int     `json:"hidden_size"`
	Heads      int     `json:"num_attention_heads"`
	KVHeads    int     `json:"num_key_value_heads,omitempty"` // llama; 0 means Heads
	Hidden     int     `json:"intermediate_size,omitempty"`   // MLP width; 0 means 4*Dim (gpt2) or the llama rule
	Vocab      int     `json:"vocab_size"`
	MaxSeq     int     `json:"max_position_embeddings"`
	TiedEmbed  bool    `json:"tie_word_embeddings"`
	QKVBias    bool    `json:"attention_bias,omitempty"` // llama family only (Qwen2 style)
	RopeTheta  float32 `json:"rope_theta,omitempty"`
	NormEps    float32 `json:"norm_eps,omitempty"`
	InitStdDev float32 `json:"initializer_range,omitempty"`
}

// Normalized returns c with defaults filled in and checks every field; errors
// name the field.
func (c Config) Normalized() (Config, error) {
	c.Family = strings.ToLower(c.Family)
	switch c.Family {
	case GPT2:
		c.TiedEmbed = true
		if c.KVHeads == 0 {
			c.KVHeads = c.Heads
		}
		if c.KVHeads != c.Heads {
			return c, fmt.Errorf("num_key_value_heads: gpt2 uses full multi-head attention (%d heads), got %d", c.Heads, c.KVHeads)
		}
		if c.Hidden == 0 {
			c.Hidden = 4 * c.Dim
		}
		if c.QKVBias {
			return c, fmt.Errorf("attention_bias: gpt2 always has biases; the flag is for llama")
		}
	case Llama:
		if c.KVHeads == 0 {
			c.KVHeads = c.Heads
		}
		if c.Hidden == 0 { // 8/3 * dim rounded up to a multiple of 32, as Llama does
			c.Hidden = (8*c.Dim/3 + 31) / 32 * 32
		}
		if c.RopeTheta == 0 {
			c.RopeTheta = 10000
		}
	default:
		return c, fmt.Errorf("family: %q is not one of %q, %q", c.Family, Llama, GPT2)
	}
	if c.NormEps == 0 {
		c.NormEps = 1e-5
	}
	if c.InitStdDev == 0 {
		c.InitStdDev = 0.02
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"num_hidden_layers", c.Layers}, {"hidden_size", c.Dim}, {"num_attention_heads", c.Heads},
		{"num_key_value_heads", c.KVHeads}, {"intermediate_size", c.Hidden}, {"vocab_size", c.Vocab}, {"max_position_embeddings", c.MaxSeq}} {
		if f.v <= 0 {
			return c, fmt.Errorf("%s: must be positive, got %d", f.name, f.v)
		}
	}
	if c.Dim%c.Heads != 0 {
		return c, fmt.Errorf("hidden_size: %d is not divisible by num_attention_heads %d", c.Dim, c.Heads)
	}
	if c.Heads%c.KVHeads != 0 {
		return c, fmt.Errorf("num_key_value_heads: %d does not divide num_attention_heads %d", c.KVHeads, c.Heads)
	}
	if c.Family == Llama && (c.Dim/c.Heads)%2 != 0 {
		return c, fmt.Errorf("hidden_size: head size %d must be even for rotary embeddings", c.Dim/c.Heads)
	}
	return c, nil
}

// HeadSize is Dim / Heads.
func (c Config) HeadSize() int { return c.Dim / c.Heads }
