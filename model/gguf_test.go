package model

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/corl-project/corl/gguf"
	"github.com/corl-project/corl/gpu/cpu"
)

// rope rotates one head's vector v (HS) at position pos: pairs (i, i+HS/2)
// as Hugging Face's rotate_half does (neox), or adjacent pairs (2i, 2i+1)
// as llama.cpp's llama architecture does.
func rope(v []float64, pos int, theta float64, neox bool) []float64 {
	HS := len(v)
	out := slices.Clone(v)
	for i := 0; i < HS/2; i++ {
		a, b := 2*i, 2*i+1
		if neox {
			a, b = i, i+HS/2
		}
		ang := float64(pos) * math.Pow(theta, -2*float64(i)/float64(HS))
		c, s := math.Cos(ang), math.Sin(ang)
		out[a], out[b] = v[a]*c-v[b]*s, v[a]*s+v[b]*c
	}
	return out
}

// TestPermuteHeadsTurnsRotateHalfIntoPairs: the permutation WriteGGUF
// applies to q and k makes llama.cpp's adjacent-pair rotation of the
// permuted vector equal the permuted rotate-half rotation, so attention
// scores (a dot product, blind to a shared permutation) are unchanged.
func TestPermuteHeadsTurnsRotateHalfIntoPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, HS := range []int{2, 8, 64} {
		v := make([]float32, 3*HS) // three heads, one column
		for i := range v {
			v[i] = r.Float32()*2 - 1
		}
		p := permuteHeads(v, 3, HS)
		for h := 0; h < 3; h++ {
			head := func(x []float32) []float64 {
				out := make([]float64, HS)
				for i := range out {
					out[i] = float64(x[h*HS+i])
				}
				return out
			}
			for _, pos := range []int{0, 1, 17} {
				want := permuteHeads(toF32(rope(head(v), pos, 10000, true)), 1, HS)
				got := rope(head(p), pos, 10000, false)
				for i := range got {
					if math.Abs(got[i]-float64(want[i])) > 1e-6 {
						t.Fatalf("HS %d head %d pos %d: element %d: %g, want %g", HS, h, pos, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func toF32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// TestWriteGGUF writes a grouped-query llama with an untied head and
// reads it back: llama.cpp's tensor names and ne order, q and k permuted
// by their own head counts, everything else the Hugging Face export
// bitwise, and the hyperparameters llama.cpp reads.
func TestWriteGGUF(t *testing.T) {
	cfg := Config{Family: Llama, Layers: 2, Dim: 32, Heads: 4, KVHeads: 2, Hidden: 48, Vocab: 19, MaxSeq: 16, RopeTheta: 5e5, NormEps: 1e-6}
	m, err := New(cpu.New(1), cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	vocab := []gguf.KV{{Key: "tokenizer.ggml.model", Value: "gpt2"}}
	if err := m.WriteGGUF(&buf, "t", vocab); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{
		"general.architecture": "llama", "llama.block_count": uint32(2), "llama.embedding_length": uint32(32),
		"llama.attention.head_count": uint32(4), "llama.attention.head_count_kv": uint32(2), "llama.feed_forward_length": uint32(48),
		"llama.vocab_size": uint32(19), "llama.rope.freq_base": float32(5e5), "llama.attention.layer_norm_rms_epsilon": float32(1e-6),
		"llama.rope.dimension_count": uint32(8), "tokenizer.ggml.model": "gpt2",
	} {
		if got := f.Get(key); got != want {
			t.Errorf("%s: %v (%T), want %v", key, got, got, want)
		}
	}
	hf := hfTensors(t, m)
	if len(f.Tensors) != len(hf) {
		t.Fatalf("%d tensors, the Hugging Face export has %d", len(f.Tensors), len(hf))
	}
	for _, h := range hf {
		name, heads, err := ggufName(h.Name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		g, ok := f.Tensor(name)
		if !ok {
			t.Fatalf("%s (%s) missing", name, h.Name)
		}
		if len(h.Shape) == 2 && !slices.Equal(g.Dims, []uint64{uint64(h.Shape[1]), uint64(h.Shape[0])}) {
			t.Errorf("%s: dims %v, want the reverse of %v", name, g.Dims, h.Shape)
		}
		want := h.Data
		switch {
		case strings.HasSuffix(name, "attn_q.weight"):
			want = permuteHeads(want, 4, 8)
			if heads != 4 {
				t.Errorf("%s permuted by %d heads", name, heads)
			}
		case strings.HasSuffix(name, "attn_k.weight"):
			want = permuteHeads(want, 2, 8)
			if heads != 2 {
				t.Errorf("%s permuted by %d heads", name, heads)
			}
		}
		if !slices.Equal(g.Data, want) {
			t.Errorf("%s: data differs from %s", name, h.Name)
		}
	}
	for _, name := range []string{"token_embd.weight", "output.weight", "output_norm.weight", "blk.1.ffn_gate.weight", "blk.1.ffn_up.weight", "blk.0.attn_output.weight"} {
		if _, ok := f.Tensor(name); !ok {
			t.Errorf("%s missing", name)
		}
	}
}

func TestWriteGGUFRefuses(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Family: GPT2, Layers: 1, Dim: 16, Heads: 2, Vocab: 11, MaxSeq: 8}, "family gpt2"},
		{Config{Family: Llama, Layers: 1, Dim: 16, Heads: 2, Vocab: 11, MaxSeq: 8, QKVBias: true, RopeScaling: RopeScaling{Type: "linear", Factor: 2}}, "rope_scaling linear"},
	} {
		m, err := New(cpu.New(1), tc.cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.WriteGGUF(&bytes.Buffer{}, "t", nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.cfg.Family, err, tc.want)
		}
	}
}

// TestWriteGGUFQwen2AndLlama3: a model with q/k/v biases is llama.cpp's
// qwen2 (its own key prefix, nothing permuted); llama3 rope scaling
// becomes rope_freqs, the factor each base frequency is divided by.
func TestWriteGGUFQwen2AndLlama3(t *testing.T) {
	qwen := Config{Family: Llama, Layers: 1, Dim: 16, Heads: 2, KVHeads: 1, Vocab: 11, MaxSeq: 8, QKVBias: true, TiedEmbed: true, RopeTheta: 1e6}
	llama3 := Config{Family: Llama, Layers: 1, Dim: 32, Heads: 2, Vocab: 11, MaxSeq: 64, RopeTheta: 5e5,
		RopeScaling: RopeScaling{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8}}
	for _, cfg := range []Config{qwen, llama3} {
		m, err := New(cpu.New(1), cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := m.WriteGGUF(&buf, "t", nil); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		arch, _ := cfg.GGUFArch()
		if got := f.Get("general.architecture"); got != arch || f.Get(arch+".rope.freq_base") != cfg.RopeTheta {
			t.Fatalf("architecture %v, %s.rope.freq_base %v", got, arch, f.Get(arch+".rope.freq_base"))
		}
		q, _ := f.Tensor("blk.0.attn_q.weight")
		wq, _, _ := m.Tensor("model.layers.0.self_attn.q_proj.weight")
		permuted := !slices.Equal(q.Data, cpu.Data(wq))
		if permuted != (arch == "llama") {
			t.Errorf("%s: q permuted = %v", arch, permuted)
		}
		rf, ok := f.Tensor("rope_freqs.weight")
		if ok != (cfg.RopeScaling.Type != "") {
			t.Fatalf("%s: rope_freqs present = %v", arch, ok)
		}
		if !ok {
			continue
		}
		// Head size 16, base frequencies 5e5^(-i/8): wavelengths 2*pi*5e5^(i/8)
		// are 6.3 for i = 0, between 8/4 and 8/1 (original positions over the
		// high and low factors), so blended; 32.4 and up for i >= 1, past 8,
		// so divided by the whole factor.
		if len(rf.Data) != 8 || rf.Data[7] != 32 || rf.Data[1] != 32 || !(rf.Data[0] > 1 && rf.Data[0] < 32) {
			t.Errorf("rope_freqs %v: want a blended first factor and 32 after", rf.Data)
		}
	}
}
