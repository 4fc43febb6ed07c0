package model

import (
	"fmt"
	"math"
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
	// HeadDim is the attention head size when it is not hidden_size /
	// num_attention_heads (llama; 0: that quotient).
	HeadDim int `json:"head_dim,omitempty"`
	// RopeScaling rescales the rotary frequencies (llama; zero: none).
	RopeScaling RopeScaling `json:"rope_scaling,omitzero"`
}

// RopeScaling is config.json's rope_scaling: "linear" divides every
// frequency by Factor; "llama3" divides the low frequencies by Factor and
// leaves the high ones, blending between (Llama 3.1's rule); "dynamic"
// (NTK) changes nothing within max_position_embeddings, which corl never
// exceeds.
type RopeScaling struct {
	Type                 string  `json:"rope_type,omitempty"`
	Factor               float32 `json:"factor,omitempty"`
	LowFreqFactor        float32 `json:"low_freq_factor,omitempty"`
	HighFreqFactor       float32 `json:"high_freq_factor,omitempty"`
	OriginalMaxPositions int     `json:"original_max_position_embeddings,omitempty"`
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
	if c.HeadDim < 0 || (c.HeadDim > 0 && c.Family == GPT2) {
		return c, fmt.Errorf("head_dim: %d; a positive head size, for llama only", c.HeadDim)
	}
	if c.HeadDim == 0 && c.Dim%c.Heads != 0 {
		return c, fmt.Errorf("hidden_size: %d is not divisible by num_attention_heads %d (set head_dim)", c.Dim, c.Heads)
	}
	if c.Heads%c.KVHeads != 0 {
		return c, fmt.Errorf("num_key_value_heads: %d does not divide num_attention_heads %d", c.KVHeads, c.Heads)
	}
	if c.Family == Llama && c.HeadSize()%2 != 0 {
		return c, fmt.Errorf("head_dim: head size %d must be even for rotary embeddings", c.HeadSize())
	}
	switch rs := c.RopeScaling; rs.Type {
	case "", "default":
		c.RopeScaling = RopeScaling{}
	case "linear", "dynamic", "llama3":
		if c.Family != Llama || rs.Factor <= 0 {
			return c, fmt.Errorf("rope_scaling: %s scaling needs a llama model and a positive factor, got %v", rs.Type, rs.Factor)
		}
		if rs.Type == "llama3" && (rs.LowFreqFactor <= 0 || rs.HighFreqFactor <= rs.LowFreqFactor || rs.OriginalMaxPositions <= 0) {
			return c, fmt.Errorf("rope_scaling: llama3 needs 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings, got %+v", rs)
		}
	default:
		return c, fmt.Errorf("rope_scaling: rope_type %q is not supported (linear, dynamic, llama3)", rs.Type)
	}
	return c, nil
}

// HeadSize is HeadDim, or Dim / Heads.
func (c Config) HeadSize() int {
	if c.HeadDim > 0 {
		return c.HeadDim
	}
	return c.Dim / c.Heads
}

// ropeFrequencies is the rotary inverse frequencies when rope_scaling
// changes them (nil otherwise: the backend's theta^(-2i/HS)), computed as
// transformers computes them.
func (c Config) ropeFrequencies() []float32 {
	rs := c.RopeScaling
	if rs.Type != "linear" && rs.Type != "llama3" {
		return nil
	}
	HS := c.HeadSize()
	inv := make([]float32, HS/2)
	for i := range inv {
		f := math.Pow(float64(c.RopeTheta), -2*float64(i)/float64(HS))
		switch rs.Type {
		case "linear":
			f /= float64(rs.Factor)
		case "llama3":
			low := float64(rs.OriginalMaxPositions) / float64(rs.LowFreqFactor)
			high := float64(rs.OriginalMaxPositions) / float64(rs.HighFreqFactor)
			wavelen := 2 * math.Pi / f
			switch {
			case wavelen < high:
			case wavelen > low:
				f /= float64(rs.Factor)
			default:
				smooth := (float64(rs.OriginalMaxPositions)/wavelen - float64(rs.LowFreqFactor)) / float64(rs.HighFreqFactor-rs.LowFreqFactor)
				f = (1-smooth)*f/float64(rs.Factor) + smooth*f
			}
		}
		inv[i] = float32(f)
	}
	return inv
}
