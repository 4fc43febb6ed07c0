package model

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/gpu/cpu"
)

// TestPlanIsWhatIsAllocated: the plan's activations and cache are the
// buffers a training step and a generation cache allocate, float for float.
func TestPlanIsWhatIsAllocated(t *testing.T) {
	for name, cfg := range tinyConfigs() {
		m, err := New(cpu.New(2), cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for _, recompute := range []bool{false, true} {
			for _, rows := range []int{0, 3} {
				m.Recompute, m.LogitRows = recompute, rows
				m.own.arena = nil // the arena only grows: measure each from nothing
				if _, err := m.TrainStep(randBatch(r, 2, 4, cfg.Vocab), DefaultOptim(1e-3)); err != nil {
					t.Fatal(err)
				}
				act := m.Cfg.ActivationFloats(2, 4, m.Cfg.tiledOn(m.be), recompute, rows)
				if got := m.own.arena.Len(); got != act+act/4 {
					t.Errorf("%s, recompute %v, logit rows %d: training arena of %d floats, plan %d + a quarter", name, recompute, rows, got, act)
				}
			}
		}
		for _, kv := range []KVType{KVFloat32, KVHalf} {
			if kv == KVHalf && m.Cfg.HeadSize()%2 != 0 {
				continue
			}
			kc, err := m.NewCacheWith(3, 8, kv, WeightFloat32)
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for _, b := range append(append([]gpu.Buffer{kc.x, kc.x2, kc.ln, kc.mean, kc.rstd, kc.q, kc.kn, kc.vn, kc.att, kc.attOut, kc.fc, kc.act, kc.tmp, kc.lnf, kc.logs}, kc.k...), kc.v...) {
				got += b.Len()
			}
			if want := m.Cfg.CacheFloats(3, 8, 2, kv == KVHalf); got != want {
				t.Errorf("%s, %s cache: %d floats allocated, plan %d", name, kv, got, want)
			}
			m.FreeCache(kc)
		}
	}
}

// TestShapesHavePublishedSizes: every embedded shape has its model's
// published parameter count.
func TestShapesHavePublishedSizes(t *testing.T) {
	want := map[string]int{"qwen2.5-0.5b": 494_032_768, "qwen2.5-1.5b": 1_543_714_304, "qwen2.5-3b": 3_085_938_688,
		"qwen2.5-7b": 7_615_616_512, "llama-3.2-1b": 1_235_814_400}
	if len(ShapeNames()) != len(want) {
		t.Errorf("shapes %v, want %d", ShapeNames(), len(want))
	}
	for _, name := range ShapeNames() {
		files, err := ShapeFiles(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ParseConfig(name, files["config.json"])
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.NumParams(); got != want[name] {
			t.Errorf("%s: %d parameters, published %d", name, got, want[name])
		}
	}
}

// TestPlanRefusesNamingWhatToChange: a plan past the memory is an error
// naming the largest item the spec controls, or the model's own state when
// that alone does not fit.
func TestPlanRefusesNamingWhatToChange(t *testing.T) {
	files, _ := ShapeFiles("qwen2.5-0.5b")
	cfg, _ := ParseConfig("qwen2.5-0.5b", files["config.json"])
	rows := cfg.Plan(PlanOptions{MicroBatch: 64, Seq: 1024, Slots: 8, Capacity: 1024, Parts: 1})
	var out bytes.Buffer
	if err := WritePlan(&out, rows, 80<<30); err == nil || !strings.Contains(err.Error(), "recompute: true") {
		t.Errorf("activations past 80 GiB: err = %v\n%s", err, out.String())
	}
	if err := WritePlan(&out, rows, 4<<30); err == nil || !strings.Contains(err.Error(), "16 bytes a parameter") {
		t.Errorf("state past 4 GiB: err = %v", err)
	}
	if err := WritePlan(&out, cfg.Plan(PlanOptions{MicroBatch: 1, Seq: 512, Slots: 8, Capacity: 512, Parts: 1}), 80<<30); err != nil {
		t.Errorf("a small plan refused: %v", err)
	}
}

// TestSaveHFAsWritesAPublishedLayout: shards in the asked dtype with their
// index, the given files as given, and a checkpoint that loads and saves
// back byte for byte.
func TestSaveHFAsWritesAPublishedLayout(t *testing.T) {
	m, err := New(cpu.New(1), tinyConfigs()["llama-gqa-bias"], 3)
	if err != nil {
		t.Fatal(err)
	}
	gen := []byte("{\"eos_token_id\": [1, 2]}\n")
	dir, again := t.TempDir(), t.TempDir()
	if err := m.SaveHFAs(dir, "BF16", 3, map[string][]byte{"generation_config.json": gen, "README.md": []byte("random\n")}); err != nil {
		t.Fatal(err)
	}
	got, err := LoadHF(cpu.New(1), dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.StoredAs() != "BF16" || len(got.src.shards) != 3 || fmt.Sprint(got.Generation.EOS) != "[1 2]" {
		t.Fatalf("stored as %s in %d shards, EOS %v", got.StoredAs(), len(got.src.shards), got.Generation.EOS)
	}
	if err := got.SaveHF(again); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.json", "generation_config.json", "model.safetensors.index.json", "model-00002-of-00003.safetensors"} {
		a, _ := os.ReadFile(filepath.Join(dir, name))
		b, _ := os.ReadFile(filepath.Join(again, name))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: %d bytes written, %d saved back, or they differ", name, len(a), len(b))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(b) != "random\n" {
		t.Errorf("README.md: %q", b)
	}
}

// TestPlanCountsTheBF16Copy: generation reading bfloat16 weights holds a
// copy of 2 bytes a parameter beside the float32 ones, and the plan says
// so; without it the plan has no such row.
func TestPlanCountsTheBF16Copy(t *testing.T) {
	c := Config{Family: Llama, Layers: 2, Dim: 64, Heads: 4, KVHeads: 2, Vocab: 257, MaxSeq: 64}
	o := PlanOptions{MicroBatch: 2, Seq: 16, Slots: 4, Capacity: 32, Parts: 1}
	sum := func(rows []PlanRow) (total int64, bf int64) {
		for _, r := range rows {
			total += r.Bytes
			if r.What == "bfloat16 weights" {
				bf = r.Bytes
			}
		}
		return total, bf
	}
	plain, none := sum(c.Plan(o))
	o.BF16Weights = true
	with, bf := sum(c.Plan(o))
	if none != 0 || bf != 2*int64(c.NumParams()) || with != plain+bf {
		t.Errorf("bf16 copy %d bytes (want %d), totals %d and %d", bf, 2*c.NumParams(), plain, with)
	}
}

// TestPlanWithLoRAIsWhatIsAllocated: with adapters the plan's state rows
// are the buffers AttachLoRA leaves (adapters, their gradient with the
// norms' discarded tail, two moments), and its scratch the pass's adapter
// buffers after a step; a plan whose full fine-tune does not fit names
// LoRA.
func TestPlanWithLoRAIsWhatIsAllocated(t *testing.T) {
	cfg := tinyConfigs()["llama-gqa-bias"]
	lc := LoRA{Rank: 3, Alpha: 6, Targets: []string{"q_proj", "gate_proj", "down_proj"}}
	m, err := New(cpu.New(1), cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AttachLoRA(lc, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := m.TrainStep(randBatch(rand.New(rand.NewPCG(1, 2)), 2, 4, cfg.Vocab), DefaultOptim(1e-3)); err != nil {
		t.Fatal(err)
	}
	rows := m.Cfg.Plan(PlanOptions{MicroBatch: 2, Seq: 4, Slots: 1, Capacity: 8, Parts: 1, LoRA: &lc})
	P := int64(m.lo.total)
	s := m.own.loraBuf
	for _, c := range []struct {
		what string
		want int64
	}{
		{"weights", 4 * (P + int64(m.lora.params.Len()))},
		{"gradients", 4 * int64(m.grads.Len())},
		{"AdamW moments", 4 * int64(m.m.Len()+m.v.Len())},
		{"LoRA scratch", 4 * int64(s.u.Len()+s.du.Len()+s.y.Len())},
	} {
		i := slices.IndexFunc(rows, func(r PlanRow) bool { return r.What == c.what })
		if i < 0 || rows[i].Bytes != c.want {
			t.Errorf("%s: plan %+v, allocated %d bytes", c.what, rows, c.want)
		}
	}
	files, err := ShapeFiles("qwen2.5-7b")
	if err != nil {
		t.Fatal(err)
	}
	big, err := ParseConfig("config.json", files["config.json"])
	if err != nil {
		t.Fatal(err)
	}
	o := PlanOptions{MicroBatch: 4, Seq: 1024, Slots: 64, Capacity: 1024, Parts: 1, Tiled: true, Recompute: true, LogitRows: 1024}
	var out bytes.Buffer
	if err := WritePlan(&out, big.Plan(o), 80<<30); err == nil || !strings.Contains(err.Error(), "LoRA") {
		t.Errorf("7B full fine-tune on 80 GiB: %v; want LoRA named", err)
	}
	o.LoRA = &LoRA{Rank: 16, Alpha: 32, Targets: LoRAModules}
	if err := WritePlan(&out, big.Plan(o), 80<<30); err != nil {
		t.Errorf("7B with LoRA r 16 on 80 GiB: %v", err)
	}
}
