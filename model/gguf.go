package model

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/corl-project/corl/gguf"
)

// GGUF: llama.cpp's model file, written so that llama.cpp runs corl's weights
// (corl bench llamacpp). The tensors are the Hugging Face checkpoint's under
// llama.cpp's names, in float32, as llama.cpp's convert_hf_to_gguf.py lays
// them out:
//   - a llama model is llama.cpp's "llama" architecture, with q_proj and
//     k_proj permuted: Hugging Face rotates the two halves of each head
//     (rotate_half), llama.cpp's llama rotates adjacent pairs, so row
//     h*HS + 2i + s of the GGUF matrix is row h*HS + s*HS/2 + i of the
//     checkpoint's;
//   - a model with q/k/v biases (Qwen2) is llama.cpp's "qwen2", which
//     rotates halves as Hugging Face does, so nothing is permuted;
//   - rope_scaling (linear, llama3) becomes the rope_freqs tensor: for each
//     frequency, the factor llama.cpp divides it by (llama only).
// Other families and scalings are refused naming the field.

// ggufNames maps the Hugging Face names of one llama layer to llama.cpp's.
var ggufNames = map[string]string{
	"input_layernorm.weight":          "attn_norm.weight",
	"self_attn.q_proj.weight":         "attn_q.weight",
	"self_attn.k_proj.weight":         "attn_k.weight",
	"self_attn.v_proj.weight":         "attn_v.weight",
	"self_attn.q_proj.bias":           "attn_q.bias",
	"self_attn.k_proj.bias":           "attn_k.bias",
	"self_attn.v_proj.bias":           "attn_v.bias",
	"self_attn.o_proj.weight":         "attn_output.weight",
	"post_attention_layernorm.weight": "ffn_norm.weight",
	"mlp.gate_proj.weight":            "ffn_gate.weight",
	"mlp.up_proj.weight":              "ffn_up.weight",
	"mlp.down_proj.weight":            "ffn_down.weight",
}

// GGUFArch is llama.cpp's architecture for the model ("" and an error if
// llama.cpp cannot run it as corl does).
func (c Config) GGUFArch() (string, error) {
	switch {
	case c.Family != Llama:
		return "", fmt.Errorf("gguf: family %s: only llama is written", c.Family)
	case c.QKVBias && c.RopeScaling.Type != "" && c.RopeScaling.Type != "dynamic":
		return "", fmt.Errorf("gguf: rope_scaling %s is written for llama.cpp's llama, not its qwen2 (attention_bias)", c.RopeScaling.Type)
	case c.QKVBias:
		return "qwen2", nil
	}
	return "llama", nil
}

// WriteGGUF writes the model as a GGUF file for llama.cpp (see GGUFArch);
// vocab is the tokenizer's metadata (tokenizer.ggml.*), which the model does
// not know. Tensors are read from the model one at a time as they are
// written.
func (m *Model) WriteGGUF(w io.Writer, name string, vocab []gguf.KV) error {
	c := m.Cfg
	arch, err := c.GGUFArch()
	if err != nil {
		return err
	}
	HS := c.HeadSize()
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: arch},
		{Key: "general.name", Value: name},
		{Key: "general.file_type", Value: uint32(0)}, // all float32
	}
	for _, kv := range []gguf.KV{
		{Key: "vocab_size", Value: uint32(c.Vocab)},
		{Key: "context_length", Value: uint32(c.MaxSeq)},
		{Key: "embedding_length", Value: uint32(c.Dim)},
		{Key: "block_count", Value: uint32(c.Layers)},
		{Key: "feed_forward_length", Value: uint32(c.Hidden)},
		{Key: "attention.head_count", Value: uint32(c.Heads)},
		{Key: "attention.head_count_kv", Value: uint32(c.KVHeads)},
		{Key: "attention.key_length", Value: uint32(HS)},
		{Key: "attention.value_length", Value: uint32(HS)},
		{Key: "attention.layer_norm_rms_epsilon", Value: c.NormEps},
		{Key: "rope.freq_base", Value: c.RopeTheta},
		{Key: "rope.dimension_count", Value: uint32(HS)},
	} {
		kvs = append(kvs, gguf.KV{Key: arch + "." + kv.Key, Value: kv.Value})
	}
	kvs = append(kvs, vocab...)
	var tensors []gguf.Tensor
	if inv := m.invFreq; inv != nil {
		factors := make([]float32, len(inv))
		for i, f := range inv {
			factors[i] = float32(math.Pow(float64(c.RopeTheta), -2*float64(i)/float64(HS)) / float64(f))
		}
		tensors = append(tensors, gguf.Tensor{Name: "rope_freqs.weight", Dims: []uint64{uint64(len(factors))}, Data: factors})
	}
	for _, h := range m.hfLayout() {
		gname, heads, err := ggufName(h.name, c)
		if err != nil {
			return err
		}
		if arch != "llama" {
			heads = 0
		}
		dims := make([]uint64, len(h.shape))
		for i, d := range h.shape {
			dims[len(dims)-1-i] = uint64(d)
		}
		tensors = append(tensors, gguf.Tensor{Name: gname, Dims: dims, Load: func() ([]float32, error) {
			data, err := m.hfData(h)
			if err == nil && heads > 0 {
				data = permuteHeads(data, heads, HS)
			}
			return data, err
		}})
	}
	return gguf.Write(w, kvs, tensors)
}

// ggufName returns llama.cpp's name for a Hugging Face tensor and, for q and
// k, the head count to permute by (0: none).
func ggufName(hf string, c Config) (string, int, error) {
	switch hf {
	case "model.embed_tokens.weight":
		return "token_embd.weight", 0, nil
	case "model.norm.weight":
		return "output_norm.weight", 0, nil
	case "lm_head.weight":
		return "output.weight", 0, nil
	}
	var l int
	var rest string
	if _, err := fmt.Sscanf(hf, "model.layers.%d.", &l); err == nil {
		rest = strings.TrimPrefix(hf, fmt.Sprintf("model.layers.%d.", l))
	}
	g, ok := ggufNames[rest]
	if !ok {
		return "", 0, fmt.Errorf("gguf: tensor %s has no llama.cpp name", hf)
	}
	heads := 0
	switch {
	case strings.HasPrefix(rest, "self_attn.q_proj."):
		heads = c.Heads
	case strings.HasPrefix(rest, "self_attn.k_proj."):
		heads = c.KVHeads
	}
	return fmt.Sprintf("blk.%d.%s", l, g), heads, nil
}

// permuteHeads reorders the rows of x (heads*HS rows; a bias is rows of one)
// from rotate-half order to adjacent pairs within each head.
func permuteHeads(x []float32, heads, HS int) []float32 {
	cols := len(x) / (heads * HS)
	out := make([]float32, len(x))
	for h := 0; h < heads; h++ {
		for i := 0; i < HS/2; i++ {
			for s := 0; s < 2; s++ {
				dst, src := h*HS+2*i+s, h*HS+s*HS/2+i
				copy(out[dst*cols:(dst+1)*cols], x[src*cols:(src+1)*cols])
			}
		}
	}
	return out
}
