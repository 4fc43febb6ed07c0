package model

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/safetensors"
)

// loraTargetSets are the target sets the tests adapt: every projection,
// the attention pair most recipes use, one half of the fused gate|up
// matrix alone, and the rest.
var loraTargetSets = [][]string{LoRAModules, {"q_proj", "v_proj"}, {"up_proj"}, {"gate_proj", "down_proj", "o_proj", "k_proj"}}

// randomAdapters fills m's adapters with random values (B too, which
// starts at zero), the rows outside a gate_proj or up_proj B's half left
// at zero.
func randomAdapters(t *testing.T, m *Model, seed uint64) []float32 {
	t.Helper()
	host, err := m.LoRAParams()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	for _, ads := range m.lora.layers {
		for _, ad := range ads {
			b := m.lora.tensors[ad.b]
			for j := range b.Size() {
				if row := j / m.lora.cfg.Rank; row < ad.padFrom || row >= ad.padFrom+ad.padRows {
					host[b.Off+j] = float32(r.NormFloat64() * 0.3)
				}
			}
		}
	}
	if err := m.SetLoRAParams(host); err != nil {
		t.Fatal(err)
	}
	return host
}

// TestLoRAGradientsAreTheMergedModels: with adapters, a pass's
// log-probabilities are the merged model's (W + s B A, MergeLoRA), and the
// adapters' gradients are the chain rule of the merged weights' gradient:
// dA = s B^T dW, dB = s dW A^T, over the adapter's own rows of a fused
// gate|up matrix. On every llama shape and target set, at a temperature,
// through Accumulate's passes on threads, within float32 rounding of
// sums in another order.
func TestLoRAGradientsAreTheMergedModels(t *testing.T) {
	loraMatchesMerged(t, func() gpu.Backend { return cpu.New(2) }, false)
}

func loraMatchesMerged(t *testing.T, newBackend func() gpu.Backend, unscaled bool) {
	for name, cfg := range runnableConfigs(unscaled) {
		if cfg.Family != Llama {
			continue
		}
		for ti, targets := range loraTargetSets {
			t.Run(fmt.Sprintf("%s/targets=%d", name, ti), func(t *testing.T) {
				lc := LoRA{Rank: 3, Alpha: 6, Targets: targets}
				m, err := New(newBackend(), cfg, 7)
				if err != nil {
					t.Fatal(err)
				}
				if err := m.AttachLoRA(lc, 9); err != nil {
					t.Fatal(err)
				}
				ad := randomAdapters(t, m, 3)
				ref, err := New(newBackend(), cfg, 7)
				if err != nil {
					t.Fatal(err)
				}
				if err := ref.AttachLoRA(lc, 9); err != nil {
					t.Fatal(err)
				}
				if err := ref.SetLoRAParams(ad); err != nil {
					t.Fatal(err)
				}
				if err := ref.MergeLoRA(); err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(5, 6))
				batches := []Batch{randBatch(r, 2, 5, cfg.Vocab), randBatch(r, 1, 8, cfg.Vocab)}
				logps := [2][][]float32{}
				for k, mm := range []*Model{m, ref} {
					mm.ZeroGrad()
					logps[k] = make([][]float32, len(batches))
					err := mm.Accumulate(len(batches), func(j int, p *Pass) error {
						b := batches[j]
						lp, _, err := p.ForwardAt(b.Inputs, b.Targets, b.B, b.T, 0.7, false)
						if err != nil {
							return err
						}
						logps[k][j] = lp
						d := make([]float32, len(b.Inputs))
						for i := range d {
							d[i] = -b.Weights[i] / float32(len(d))
						}
						return p.Backward(d)
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				for j := range batches {
					for i, v := range logps[0][j] {
						if w := logps[1][j][i]; math.Abs(float64(v-w)) > 1e-5*(1+math.Abs(float64(w))) {
							t.Fatalf("batch %d token %d: log-prob %v with adapters, %v merged", j, i, v, w)
						}
					}
				}
				got, err := m.LoRAGrads()
				if err != nil {
					t.Fatal(err)
				}
				dW := make([]float32, ref.lo.total)
				ref.be.Download(dW, ref.grads)
				if err := ref.be.Sync(); err != nil {
					t.Fatal(err)
				}
				want := make([]float64, len(got))
				s, rk := float64(lc.Scale()), lc.Rank
				for l, ads := range m.lora.layers {
					lp := m.lo.layers[l]
					for _, a := range ads {
						w := m.lo.tensors[lp.projection(a.module)]
						A, B := m.lora.tensors[a.a].Off, m.lora.tensors[a.b].Off
						for o := range a.rows {
							if o >= a.padFrom && o < a.padFrom+a.padRows {
								continue
							}
							for i := range a.in {
								g := float64(dW[w.Off+o*a.in+i])
								for k := range rk {
									want[A+k*a.in+i] += s * float64(ad[B+o*rk+k]) * g
									want[B+o*rk+k] += s * g * float64(ad[A+k*a.in+i])
								}
							}
						}
					}
				}
				for _, tn := range m.lora.tensors {
					big := 0.0
					for _, v := range want[tn.Off : tn.Off+tn.Size()] {
						big = max(big, math.Abs(v))
					}
					if big == 0 {
						t.Fatalf("%s: the merged model's gradient gives it none: the test would not see a wrong one", tn.Name)
					}
					for i := range tn.Size() {
						if d := math.Abs(float64(got[tn.Off+i]) - want[tn.Off+i]); d > 1e-4*big {
							t.Fatalf("%s[%d]: gradient %v, want %v (merged model's chain rule)", tn.Name, i, got[tn.Off+i], want[tn.Off+i])
						}
					}
				}
			})
		}
	}
}

// TestLoRAStartsAsTheBaseAndTrainsOnlyTheAdapters: attached, the adapters
// (B at zero) leave every log-probability the base's, bit for bit; the
// model then holds gradients for the adapters alone; training lowers the
// loss while every base weight keeps its bits and the rows outside an
// adapter's half of gate|up stay zero.
func TestLoRAStartsAsTheBaseAndTrainsOnlyTheAdapters(t *testing.T) {
	cfg := tinyConfigs()["llama-gqa-bias"]
	// A frozen head of the default init (std 0.02) spans logits of +-0.3
	// after the final norm, whatever the adapters do: the loss could not
	// fall. A base with a head of some reach, as a pretrained one has.
	cfg.InitStdDev = 0.5
	base, err := New(cpu.New(1), cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cpu.New(1), cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := base.CopyParams()
	if err := m.AttachLoRA(LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj", "up_proj", "down_proj"}}, 1); err != nil {
		t.Fatal(err)
	}
	b := randBatch(rand.New(rand.NewPCG(1, 2)), 2, 8, cfg.Vocab)
	for i := range b.Targets { // one answer to learn, which the adapters can reach
		b.Targets[i] = 3
	}
	want, _, err := base.Forward(b.Inputs, b.Targets, b.B, b.T, false)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := m.Forward(b.Inputs, b.Targets, b.B, b.T, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bitsEqual(got, want) {
		t.Fatal("fresh adapters changed the log-probabilities")
	}
	if n := m.grads.Len(); n != m.lora.total+cfg.Dim || n >= m.lo.total/2 {
		t.Fatalf("gradient buffer of %d floats; want the adapters' %d (+%d discarded), far under the weights' %d", n, m.lora.total, cfg.Dim, m.lo.total)
	}
	var first, last float64
	for step := range 60 {
		loss, err := m.TrainStep(b, DefaultOptim(3e-2))
		if err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = loss
		}
		last = loss
	}
	if !(last < 0.5*first) {
		t.Errorf("loss %v after 60 steps from %v: the adapters did not learn", last, first)
	}
	after, _ := m.CopyParams()
	if !bitsEqual(after, before) {
		t.Error("training the adapters changed a base weight")
	}
	ad, _ := m.LoRAParams()
	for _, ads := range m.lora.layers {
		for _, a := range ads {
			bt := m.lora.tensors[a.b]
			for j, v := range ad[bt.Off+a.padFrom*4 : bt.Off+(a.padFrom+a.padRows)*4] {
				if v != 0 {
					t.Fatalf("%s: row %d outside %s's half is %v", bt.Name, a.padFrom+j/4, a.module, v)
				}
			}
		}
	}
	// Merged, the model decodes what the adapted one scores.
	lp, _, err := m.Forward(b.Inputs, b.Targets, b.B, b.T, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.MergeLoRA(); err != nil {
		t.Fatal(err)
	}
	merged, _, err := m.Forward(b.Inputs, b.Targets, b.B, b.T, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range lp {
		if math.Abs(float64(lp[i]-merged[i])) > 1e-5*(1+math.Abs(float64(lp[i]))) {
			t.Fatalf("token %d: %v adapted, %v merged", i, lp[i], merged[i])
		}
	}
	if m.grads.Len() != m.lo.total {
		t.Errorf("merged: gradient of %d floats, want every weight's %d", m.grads.Len(), m.lo.total)
	}
}

// TestLoRASavesInPEFTLayout: SaveLoRA writes adapter_config.json and
// adapter_model.safetensors as PEFT does (its names, (r, in) and (out, r)
// shapes, gate_proj's and up_proj's B at their own Hidden rows), and
// LoadLoRA on a fresh model of the base gives back the same bits; a
// directory that does not fit the model is refused with the tensor named.
func TestLoRASavesInPEFTLayout(t *testing.T) {
	cfg := tinyConfigs()["llama-gqa-bias"]
	m, err := New(cpu.New(1), cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AttachLoRA(LoRA{Rank: 2, Alpha: 16, Targets: []string{"up_proj", "q_proj", "gate_proj"}}, 1); err != nil {
		t.Fatal(err)
	}
	ad := randomAdapters(t, m, 4)
	dir := t.TempDir()
	if err := m.SaveLoRA(dir, "Qwen/Qwen2.5-0.5B"); err != nil {
		t.Fatal(err)
	}
	var pc map[string]any
	data, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &pc); err != nil {
		t.Fatal(err)
	}
	if pc["peft_type"] != "LORA" || pc["r"] != 2.0 || pc["lora_alpha"] != 16.0 || fmt.Sprint(pc["target_modules"]) != "[gate_proj q_proj up_proj]" ||
		pc["base_model_name_or_path"] != "Qwen/Qwen2.5-0.5B" || pc["task_type"] != "CAUSAL_LM" || pc["bias"] != "none" {
		t.Errorf("adapter_config.json: %s", data)
	}
	f, err := safetensors.ReadFile(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	H, QD := cfg.Hidden, cfg.Heads*cfg.HeadSize()
	shapes := map[string][]int{}
	for _, in := range f.Infos() {
		shapes[in.Name] = in.Shape
	}
	for name, want := range map[string][]int{
		"base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight": {2, cfg.Dim},
		"base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight": {QD, 2},
		"base_model.model.model.layers.0.mlp.gate_proj.lora_B.weight":    {H, 2},
		"base_model.model.model.layers.0.mlp.up_proj.lora_A.weight":      {2, cfg.Dim},
		"base_model.model.model.layers.0.mlp.up_proj.lora_B.weight":      {H, 2},
	} {
		if !slices.Equal(shapes[name], want) {
			t.Errorf("%s: shape %v, want %v", name, shapes[name], want)
		}
	}
	if len(shapes) != 2*3*cfg.Layers {
		t.Errorf("%d tensors, want %d", len(shapes), 2*3*cfg.Layers)
	}
	// up_proj's B is the lower half of its rows in the fused matrix.
	upB, _ := f.Float32("base_model.model.model.layers.0.mlp.up_proj.lora_B.weight")
	for _, a := range m.lora.layers[0] {
		if a.module == "up_proj" {
			off := m.lora.tensors[a.b].Off + H*2
			if !bitsEqual(upB, ad[off:off+H*2]) {
				t.Error("up_proj's lora_B is not its half of the fused rows")
			}
		}
	}
	fresh, err := New(cpu.New(1), cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.LoadLoRA(dir); err != nil {
		t.Fatal(err)
	}
	back, _ := fresh.LoRAParams()
	if !bitsEqual(back, ad) {
		t.Error("the adapters loaded back differ in bits")
	}
	// A model of other shapes: refused, the tensor named, no adapters left.
	other := cfg
	other.Dim, other.Heads, other.KVHeads = 24, 4, 2
	om, err := New(cpu.New(1), other, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := om.LoadLoRA(dir); err == nil || !strings.Contains(err.Error(), "lora_A.weight has shape [2 16], want [2 24]") {
		t.Errorf("load onto another shape: %v; want the shape named", err)
	}
	if _, ok := om.LoRAConfig(); ok || om.grads.Len() != om.lo.total {
		t.Error("a failed load left adapters attached")
	}
	// What corl does not implement is refused by field.
	pc["use_dora"] = true
	data, _ = json.Marshal(pc)
	if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLoRAConfig(dir); err == nil || !strings.Contains(err.Error(), "use_dora") {
		t.Errorf("DoRA config: %v; want use_dora named", err)
	}
}

// TestLoRARefusesWhatItCannotDo: bad settings are refused naming PEFT's
// field, and adapters are for the llama family only.
func TestLoRARefusesWhatItCannotDo(t *testing.T) {
	for _, c := range []struct {
		lora LoRA
		want string
	}{
		{LoRA{Rank: 0, Alpha: 1, Targets: []string{"q_proj"}}, "r 0"},
		{LoRA{Rank: 4, Alpha: 0, Targets: []string{"q_proj"}}, "lora_alpha"},
		{LoRA{Rank: 4, Alpha: 8}, "target_modules is empty"},
		{LoRA{Rank: 4, Alpha: 8, Targets: []string{"c_attn"}}, `"c_attn" is not`},
		{LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "q_proj"}}, "named twice"},
	} {
		if err := c.lora.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.lora, err, c.want)
		}
	}
	g, err := New(cpu.New(1), tinyConfigs()["gpt2"], 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AttachLoRA(LoRA{Rank: 2, Alpha: 2, Targets: []string{"q_proj"}}, 1); err == nil || !strings.Contains(err.Error(), "llama family") {
		t.Errorf("gpt2: %v; want a refusal naming the llama family", err)
	}
}

// TestLoRASplitDecodingMatchesOneThread: decoding with adapters split
// over threads (each part's rows of the cache's adapter scratch its own)
// gives one thread's logits.
func TestLoRASplitDecodingMatchesOneThread(t *testing.T) {
	cfg := Config{Family: Llama, Layers: 2, Dim: 64, Heads: 4, KVHeads: 2, Hidden: 48, Vocab: 13, MaxSeq: 8}
	for _, typ := range []KVType{KVFloat32, KVHalf} {
		t.Run(string(typ), func(t *testing.T) {
			testSplitDecodingOf(t, cfg, typ, func(m *Model) {
				if err := m.AttachLoRA(LoRA{Rank: 3, Alpha: 6, Targets: LoRAModules}, 2); err != nil {
					t.Fatal(err)
				}
				randomAdapters(t, m, 7)
			})
		})
	}
}

// TestLoRACachedDecodingMatchesTheForward: the cached decoder (prefill,
// and decoding with a slot sitting out) runs the adapters too: every
// position's logits are the adapted model's full forward's, on every llama
// shape, float32 and binary16 caches, every projection adapted.
func TestLoRACachedDecodingMatchesTheForward(t *testing.T) {
	for name, cfg := range tinyConfigs() {
		if cfg.Family != Llama {
			continue
		}
		for _, typ := range []KVType{KVFloat32, KVHalf} {
			t.Run(name+"/"+string(typ), func(t *testing.T) {
				testCachedLogitsOf(t, cfg, typ, func(m *Model) {
					if err := m.AttachLoRA(LoRA{Rank: 2, Alpha: 4, Targets: LoRAModules}, 5); err != nil {
						t.Fatal(err)
					}
					randomAdapters(t, m, 6)
				})
			})
		}
	}
}

// TestLoRAResumesBitForBit: the adapters and their AdamW state saved
// (SaveLoRA, SaveOptimizer) and loaded onto a fresh base (LoadLoRA,
// LoadOptimizer) train on as the model that saved them did, bit for bit.
func TestLoRAResumesBitForBit(t *testing.T) {
	cfg := tinyConfigs()["llama-gqa-bias"]
	m, err := New(cpu.New(1), cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AttachLoRA(LoRA{Rank: 2, Alpha: 4, Targets: []string{"k_proj", "o_proj", "gate_proj"}}, 3); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(8, 9))
	for range 3 {
		if _, err := m.TrainStep(randBatch(r, 2, 6, cfg.Vocab), DefaultOptim(1e-2)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := m.SaveLoRA(dir, ""); err != nil {
		t.Fatal(err)
	}
	if err := m.SaveOptimizer(filepath.Join(dir, "optimizer.safetensors")); err != nil {
		t.Fatal(err)
	}
	back, err := New(cpu.New(1), cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.LoadLoRA(dir); err != nil {
		t.Fatal(err)
	}
	if err := back.LoadOptimizer(filepath.Join(dir, "optimizer.safetensors")); err != nil {
		t.Fatal(err)
	}
	for _, mm := range []*Model{m, back} {
		r := rand.New(rand.NewPCG(10, 11))
		for range 2 {
			if _, err := mm.TrainStep(randBatch(r, 2, 6, cfg.Vocab), DefaultOptim(1e-2)); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, _ := m.LoRAParams()
	b, _ := back.LoRAParams()
	if !bitsEqual(a, b) {
		t.Error("the resumed adapters differ in bits from the ones that went on")
	}
}

// TestLoRAWithRecomputeAndLogitRows: the adapters' gradients are the same
// bits with every layer's activations kept and with recompute and logits
// by blocks (the frozen head's block sums are the only ones that move, and
// with adapters it has none).
func TestLoRAWithRecomputeAndLogitRows(t *testing.T) {
	cfg := Config{Family: Llama, Layers: 3, Dim: 16, Heads: 4, KVHeads: 2, Hidden: 24, Vocab: 11, MaxSeq: 8, QKVBias: true}
	var grads [2][]float32
	for i, saving := range []bool{false, true} {
		m, err := New(cpu.New(2), cfg, 7)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.AttachLoRA(LoRA{Rank: 2, Alpha: 4, Targets: LoRAModules}, 5); err != nil {
			t.Fatal(err)
		}
		randomAdapters(t, m, 6)
		if saving {
			m.Recompute, m.LogitRows = true, 5
		}
		b := randBatch(rand.New(rand.NewPCG(3, 4)), 3, 6, cfg.Vocab)
		b.Temperature = 0.7
		if _, _, err := m.Loss(b); err != nil {
			t.Fatal(err)
		}
		d := make([]float32, len(b.Inputs))
		for k := range d {
			d[k] = -b.Weights[k] / float32(len(d))
		}
		m.ZeroGrad()
		if err := m.Backward(d); err != nil {
			t.Fatal(err)
		}
		if grads[i], err = m.LoRAGrads(); err != nil {
			t.Fatal(err)
		}
	}
	if !bitsEqual(grads[0], grads[1]) {
		t.Error("the adapters' gradients differ with recompute and logits by blocks")
	}
}
