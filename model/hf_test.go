package model

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// publishedCheckpoint writes m as a checkpoint as it is published: a
// config.json with fields corl does not read, generation_config.json, BF16
// weights in two shards whose headers list tensors in name order while the
// data lies in layout order (writeBF16), and the index.
func publishedCheckpoint(t *testing.T, m *Model, dir string) {
	t.Helper()
	hc := map[string]any{}
	b, _ := json.Marshal(m.Cfg.toHF())
	json.Unmarshal(b, &hc)
	hc["torch_dtype"], hc["hidden_act"], hc["use_cache"], hc["transformers_version"] = "bfloat16", "silu", true, "4.45.0"
	hc["bos_token_id"], hc["eos_token_id"] = 1, 2
	cfg, _ := json.MarshalIndent(hc, "", "  ")
	files := map[string][]byte{
		"config.json":            append(cfg, '\n'),
		"generation_config.json": []byte("{\n  \"bos_token_id\": 1,\n  \"eos_token_id\": [2, 3],\n  \"do_sample\": true,\n  \"temperature\": 0.6,\n  \"top_p\": 0.9\n}\n"),
	}
	tensors := hfTensors(t, m)
	half := len(tensors) / 2
	weightMap := map[string]string{}
	for i, part := range [][]safetensors.Tensor{tensors[:half], tensors[half:]} {
		name := fmt.Sprintf("model-%05d-of-00002.safetensors", i+1)
		writeBF16(t, filepath.Join(dir, name), part)
		for _, tt := range part {
			weightMap[tt.Name] = name
		}
	}
	index, _ := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": 2 * m.NumParams()}, "weight_map": weightMap}, "", "  ")
	files["model.safetensors.index.json"] = append(index, '\n')
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPublishedCheckpointRoundTripsByteForByte: a sharded BF16 checkpoint
// with a foreign header layout, loaded and saved, is the same files byte
// for byte; generation_config.json's stop tokens and sampling defaults are
// read.
func TestPublishedCheckpointRoundTripsByteForByte(t *testing.T) {
	for _, name := range []string{"llama-gqa-bias", "llama-tied", "llama-headdim-rope3"} {
		t.Run(name, func(t *testing.T) {
			m, err := New(cpu.New(1), tinyConfigs()[name], 9)
			if err != nil {
				t.Fatal(err)
			}
			src, dst := t.TempDir(), t.TempDir()
			publishedCheckpoint(t, m, src)
			got, err := LoadHF(cpu.New(1), src)
			if err != nil {
				t.Fatal(err)
			}
			if got.StoredAs() != safetensors.BF16 {
				t.Errorf("stored as %s, want BF16", got.StoredAs())
			}
			g := got.Generation
			if g.BOS != 1 || fmt.Sprint(g.EOS) != "[2 3]" || !g.Ends(3) || g.Ends(1) || g.Temperature != 0.6 || g.TopP != 0.9 || g.DoSample == nil || !*g.DoSample {
				t.Errorf("generation config read as %+v", g)
			}
			if err := got.SaveHF(dst); err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(src)
			out, _ := os.ReadDir(dst)
			if len(out) != len(entries) {
				t.Fatalf("saved %d files, the checkpoint has %d", len(out), len(entries))
			}
			for _, e := range entries {
				a, _ := os.ReadFile(filepath.Join(src, e.Name()))
				b, err := os.ReadFile(filepath.Join(dst, e.Name()))
				if err != nil || !bytes.Equal(a, b) {
					t.Errorf("%s: saved file differs from the checkpoint's (err %v)", e.Name(), err)
				}
			}
		})
	}
}

// TestRoundedCheckpointResumesFromMasterWeights: after a training step a
// BF16 checkpoint is written rounded, and the optimizer file keeps the
// float32 master weights, so a resumed model has the trained weights bit
// for bit; the checkpoint alone reads back as their rounding.
func TestRoundedCheckpointResumesFromMasterWeights(t *testing.T) {
	cfg := tinyConfigs()["llama-gqa-bias"]
	m, err := New(cpu.New(1), cfg, 4)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := t.TempDir(), t.TempDir()
	publishedCheckpoint(t, m, src)
	if m, err = LoadHF(cpu.New(1), src); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2, 2))
	if _, err := m.TrainStep(randBatch(r, 2, 4, cfg.Vocab), DefaultOptim(1e-2)); err != nil {
		t.Fatal(err)
	}
	if err := m.SaveHF(dst); err != nil {
		t.Fatal(err)
	}
	opt := filepath.Join(dst, "optimizer.safetensors")
	if err := m.SaveOptimizer(opt); err != nil {
		t.Fatal(err)
	}
	rounded, err := LoadHF(cpu.New(1), dst)
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := LoadHF(cpu.New(1), dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := resumed.LoadOptimizer(opt); err != nil {
		t.Fatal(err)
	}
	trained, inexact := cpu.Data(m.params), 0
	for i, v := range trained {
		if math.Float32bits(cpu.Data(resumed.params)[i]) != math.Float32bits(v) {
			t.Fatalf("weight %d resumed as %v, trained %v", i, cpu.Data(resumed.params)[i], v)
		}
		if w := cpu.Data(rounded.params)[i]; w != bf16Round(v) {
			t.Fatalf("weight %d: checkpoint holds %v, want bf16(%v)", i, w, v)
		} else if w != v {
			inexact++
		}
	}
	if inexact == 0 {
		t.Fatal("no trained weight needed rounding: the test shows nothing")
	}
}

// TestReadGenerationRefuses names the file and the field.
func TestReadGenerationRefuses(t *testing.T) {
	for body, want := range map[string]string{
		`{"eos_token_id": "x"}`:             "token id",
		`{"bos_token_id": [1, 2]}`:          "bos_token_id: one id",
		`{"eos_token_id": [-1]}`:            "negative",
		`{"eos_token_id": 2, "top_p": 1.5}`: "top_p",
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(body), 0o644)
		if _, err := ReadGeneration(dir); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "generation_config.json") {
			t.Errorf("%s: err = %v, want %q", body, err, want)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"eos_token_id": null, "bos_token_id": 7}`), 0o644)
	if g, err := ReadGeneration(dir); err != nil || g.BOS != 7 || len(g.EOS) != 0 {
		t.Errorf("from config.json: %+v, %v", g, err)
	}
}
