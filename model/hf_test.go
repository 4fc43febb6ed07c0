package model

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/safetensors"
)

func TestHFRoundTripBitwise(t *testing.T) {
	for name, cfg := range tinyConfigs() {
		t.Run(name, func(t *testing.T) {
			be := cpu.New(1)
			m, err := New(be, cfg, 5)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 1))
			// One step, so the optimizer state is non-trivial.
			if _, err := m.TrainStep(randBatch(r, 2, 4, cfg.Vocab), DefaultOptim(1e-2)); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := m.SaveHF(dir); err != nil {
				t.Fatal(err)
			}
			if err := m.SaveOptimizer(filepath.Join(dir, "optimizer.safetensors")); err != nil {
				t.Fatal(err)
			}
			m2, err := LoadHF(be, dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := m2.LoadOptimizer(filepath.Join(dir, "optimizer.safetensors")); err != nil {
				t.Fatal(err)
			}
			if m2.Cfg != m.Cfg {
				t.Fatalf("config %+v read back as %+v", m.Cfg, m2.Cfg)
			}
			for _, pair := range [][2][]float32{{cpu.Data(m.params), cpu.Data(m2.params)}, {cpu.Data(m.m), cpu.Data(m2.m)}, {cpu.Data(m.v), cpu.Data(m2.v)}} {
				for i := range pair[0] {
					if math.Float32bits(pair[0][i]) != math.Float32bits(pair[1][i]) {
						t.Fatalf("value %d: %v read back as %v", i, pair[0][i], pair[1][i])
					}
				}
			}
			if m2.step != m.step {
				t.Fatalf("step %d read back as %d", m.step, m2.step)
			}
		})
	}
}

// TestGPT2CheckpointLayout checks the Conv1D transpose and the c_attn fusion
// against values placed by hand.
func TestGPT2CheckpointLayout(t *testing.T) {
	cfg := Config{Family: GPT2, Layers: 1, Dim: 4, Heads: 2, Vocab: 5, MaxSeq: 3}
	m, _ := New(cpu.New(1), cfg, 1)
	wq, _, _ := m.Tensor("h.0.attn.q.weight")
	wk, _, _ := m.Tensor("h.0.attn.k.weight")
	cpu.Data(wq)[1*4+2] = 7 // q output 1, input 2
	cpu.Data(wk)[3*4+0] = 9 // k output 3, input 0
	dir := t.TempDir()
	if err := m.SaveHF(dir); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	in, ok := f.Info("h.0.attn.c_attn.weight")
	if !ok || in.Shape[0] != 4 || in.Shape[1] != 12 {
		t.Fatalf("c_attn.weight info %+v", in)
	}
	w, _ := f.Float32("h.0.attn.c_attn.weight") // (in=4, out=12): q outputs 0-3, k 4-7, v 8-11
	if w[2*12+1] != 7 || w[0*12+4+3] != 9 {
		t.Fatalf("c_attn.weight[2][1] = %v (want 7), [0][7] = %v (want 9)", w[2*12+1], w[0*12+7])
	}
	var hc map[string]any
	data, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	json.Unmarshal(data, &hc)
	if hc["model_type"] != "gpt2" || hc["n_embd"].(float64) != 4 {
		t.Fatalf("config.json = %v", hc)
	}
}

func TestLoadHFErrors(t *testing.T) {
	cfg := Config{Family: Llama, Layers: 1, Dim: 8, Heads: 2, Vocab: 5, MaxSeq: 3}
	m, _ := New(cpu.New(1), cfg, 1)
	dir := t.TempDir()
	if err := m.SaveHF(dir); err != nil {
		t.Fatal(err)
	}
	// An extra tensor the architecture does not use.
	f, _ := safetensors.ReadFile(filepath.Join(dir, "model.safetensors"))
	var ts []safetensors.Tensor
	for _, in := range f.Infos() {
		d, _ := f.Float32(in.Name)
		if in.Name == "model.norm.weight" {
			continue // and one missing
		}
		ts = append(ts, safetensors.Tensor{Name: in.Name, Shape: in.Shape, Data: d})
	}
	w, _ := os.Create(filepath.Join(dir, "model.safetensors"))
	safetensors.Write(w, ts, nil)
	w.Close()
	if _, err := LoadHF(cpu.New(1), dir); err == nil || !strings.Contains(err.Error(), "model.norm.weight") {
		t.Fatalf("missing tensor: err = %v", err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "bert", "vocab_size": 5}`), 0o644)
	if _, err := LoadHF(cpu.New(1), dir); err == nil || !strings.Contains(err.Error(), "model_type") {
		t.Fatalf("bad model type: err = %v", err)
	}
}
