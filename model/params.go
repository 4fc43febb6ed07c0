package model

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Tensor is one named parameter: a view of the model's parameter buffer.
type Tensor struct {
	Name  string // Hugging Face name, e.g. "model.layers.0.self_attn.q_proj.weight"
	Shape []int
	Off   int  // offset in the parameter buffer
	Decay bool // weight decay applies (matrices; not norms or biases)
}

// Size is the number of elements.
func (t Tensor) Size() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// layerParams indexes one block's tensors in the model's tensor list (-1: absent).
type layerParams struct {
	norm1w, norm1b, wq, bq, wk, bk, wv, bv, wo, bo int
	norm2w, norm2b, wfc, bfc, wproj, bproj         int // gpt2: c_fc, c_proj; llama: gate_up, down
}

// projection is the weight tensor a llama-family projection (by its
// Hugging Face module name, LoRAModules) lies in: gate_proj and up_proj
// are the two halves of the fused gate|up matrix.
func (lp layerParams) projection(mod string) int {
	switch mod {
	case "q_proj":
		return lp.wq
	case "k_proj":
		return lp.wk
	case "v_proj":
		return lp.wv
	case "o_proj":
		return lp.wo
	case "gate_proj", "up_proj":
		return lp.wfc
	case "down_proj":
		return lp.wproj
	}
	panic("model: no projection " + mod)
}

// layout lists every tensor of cfg in buffer order: all decayed matrices first,
// then norms and biases, so AdamW runs as two calls.
type layout struct {
	tensors []Tensor
	decayed int // elements in the decayed prefix
	total   int
	wte     int // tensor indexes
	wpe     int
	lmHead  int // == wte when tied
	normfW  int
	normfB  int
	layers  []layerParams
}

func newLayout(c Config) *layout {
	C, HS, L := c.Dim, c.HeadSize(), c.Layers
	QD, KVD := c.Heads*HS, c.KVHeads*HS
	var specs []Tensor
	add := func(name string, decay bool, shape ...int) int {
		specs = append(specs, Tensor{Name: name, Shape: shape, Decay: decay})
		return len(specs) - 1
	}
	lo := &layout{wpe: -1, normfB: -1, layers: make([]layerParams, L)}
	if c.Family == GPT2 {
		lo.wte = add("wte.weight", true, c.Vocab, C)
		lo.wpe = add("wpe.weight", true, c.MaxSeq, C)
		lo.lmHead = lo.wte
		for l := 0; l < L; l++ {
			p := fmt.Sprintf("h.%d.", l)
			lp := &lo.layers[l]
			lp.norm1w, lp.norm1b = add(p+"ln_1.weight", false, C), add(p+"ln_1.bias", false, C)
			// GPT-2's fused c_attn is split into q, k, v here; the checkpoint
			// reader and writer fuse and transpose it.
			lp.wq, lp.bq = add(p+"attn.q.weight", true, QD, C), add(p+"attn.q.bias", false, QD)
			lp.wk, lp.bk = add(p+"attn.k.weight", true, KVD, C), add(p+"attn.k.bias", false, KVD)
			lp.wv, lp.bv = add(p+"attn.v.weight", true, KVD, C), add(p+"attn.v.bias", false, KVD)
			lp.wo, lp.bo = add(p+"attn.c_proj.weight", true, C, QD), add(p+"attn.c_proj.bias", false, C)
			lp.norm2w, lp.norm2b = add(p+"ln_2.weight", false, C), add(p+"ln_2.bias", false, C)
			lp.wfc, lp.bfc = add(p+"mlp.c_fc.weight", true, c.Hidden, C), add(p+"mlp.c_fc.bias", false, c.Hidden)
			lp.wproj, lp.bproj = add(p+"mlp.c_proj.weight", true, C, c.Hidden), add(p+"mlp.c_proj.bias", false, C)
		}
		lo.normfW, lo.normfB = add("ln_f.weight", false, C), add("ln_f.bias", false, C)
	} else {
		lo.wte = add("model.embed_tokens.weight", true, c.Vocab, C)
		for l := 0; l < L; l++ {
			p := fmt.Sprintf("model.layers.%d.", l)
			lp := &lo.layers[l]
			lp.norm1w, lp.norm1b = add(p+"input_layernorm.weight", false, C), -1
			lp.wq, lp.wk, lp.wv = add(p+"self_attn.q_proj.weight", true, QD, C), add(p+"self_attn.k_proj.weight", true, KVD, C), add(p+"self_attn.v_proj.weight", true, KVD, C)
			lp.bq, lp.bk, lp.bv = -1, -1, -1
			if c.QKVBias {
				lp.bq, lp.bk, lp.bv = add(p+"self_attn.q_proj.bias", false, QD), add(p+"self_attn.k_proj.bias", false, KVD), add(p+"self_attn.v_proj.bias", false, KVD)
			}
			lp.wo, lp.bo = add(p+"self_attn.o_proj.weight", true, C, QD), -1
			lp.norm2w, lp.norm2b = add(p+"post_attention_layernorm.weight", false, C), -1
			// gate_proj and up_proj are stored back to back as one (2*Hidden, C)
			// matrix so the MLP runs one matmul; each half keeps its HF name
			// through Model.Tensors.
			lp.wfc, lp.bfc = add(p+"mlp.gate_up_proj.weight", true, 2*c.Hidden, C), -1
			lp.wproj, lp.bproj = add(p+"mlp.down_proj.weight", true, C, c.Hidden), -1
		}
		lo.normfW = add("model.norm.weight", false, C)
		lo.lmHead = lo.wte
		if !c.TiedEmbed {
			lo.lmHead = add("lm_head.weight", true, c.Vocab, C)
		}
	}
	// Decayed tensors first, each group in declaration order.
	off := 0
	for _, decay := range []bool{true, false} {
		for i := range specs {
			if specs[i].Decay == decay {
				specs[i].Off = off
				off += specs[i].Size()
			}
		}
		if decay {
			lo.decayed = off
		}
	}
	lo.tensors, lo.total = specs, off
	return lo
}

// initParams fills a host copy of the parameters: normal(0, std) for matrices,
// with residual output projections scaled by 1/sqrt(2*layers) (GPT-2), ones for
// norm weights, zeros for biases. Deterministic from seed.
func initParams(c Config, lo *layout, seed uint64) []float32 {
	p := make([]float32, lo.total)
	r := rand.New(rand.NewPCG(seed, 0x636f726c))
	residual := map[int]bool{}
	for _, lp := range lo.layers {
		residual[lp.wo], residual[lp.wproj] = true, true
	}
	for i, t := range lo.tensors {
		dst := p[t.Off : t.Off+t.Size()]
		switch {
		case len(t.Shape) == 2:
			std := float64(c.InitStdDev)
			if residual[i] {
				std /= math.Sqrt(2 * float64(c.Layers))
			}
			for j := range dst {
				dst[j] = float32(r.NormFloat64() * std)
			}
		case i == lo.normfW || isNormWeight(lo, i):
			for j := range dst {
				dst[j] = 1
			}
		}
	}
	return p
}

func isNormWeight(lo *layout, i int) bool {
	for _, lp := range lo.layers {
		if i == lp.norm1w || i == lp.norm2w {
			return true
		}
	}
	return false
}
