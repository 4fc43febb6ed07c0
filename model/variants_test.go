package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/safetensors"
)

// TestRopeScalingFrequencies: Llama 3.1's rule and linear scaling give the
// frequencies transformers computes (worked out from its formula).
func TestRopeScalingFrequencies(t *testing.T) {
	c, err := Config{Family: Llama, Layers: 1, Dim: 16, Heads: 2, HeadDim: 8, Vocab: 5, MaxSeq: 8, RopeTheta: 500000,
		RopeScaling: RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 4}}.Normalized()
	if err != nil {
		t.Fatal(err)
	}
	// 1/theta^(2i/8): 1 (wavelength 6.3 > 4: low, /8), 0.0376 (/8), ...;
	// wavelengths under 1 (high) would be left alone.
	want := []float64{0.125, 0.004700753866357992, 0.00017677669529663688, 6.647869871181235e-06}
	got := c.ropeFrequencies()
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-6*want[i] {
			t.Errorf("llama3 frequency %d: %v, want %v", i, got[i], want[i])
		}
	}
	c.RopeScaling = RopeScaling{Type: "linear", Factor: 4}
	if got := c.ropeFrequencies(); math.Abs(float64(got[1])-math.Pow(500000, -0.25)/4) > 1e-9 {
		t.Errorf("linear frequency 1: %v", got[1])
	}
	c.RopeScaling = RopeScaling{Type: "dynamic", Factor: 4}
	if c.ropeFrequencies() != nil {
		t.Error("dynamic scaling changed frequencies within max_position_embeddings")
	}
}

// TestRopeScalingChangesLogits: the same weights with and without
// rope_scaling agree at position 0 (no rotation) and differ after it, so
// the scaling is applied, not read and ignored.
func TestRopeScalingChangesLogits(t *testing.T) {
	base := Config{Family: Llama, Layers: 1, Dim: 16, Heads: 2, Vocab: 9, MaxSeq: 8}
	scaled := base
	scaled.RopeScaling = RopeScaling{Type: "linear", Factor: 4}
	a, err := New(cpu.New(1), base, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cpu.New(1), scaled, 3)
	if err != nil {
		t.Fatal(err)
	}
	in := []int32{1, 2, 3, 4}
	la, _ := a.ForwardLogits(in, 1, 4)
	lb, _ := b.ForwardLogits(in, 1, 4)
	V := base.Vocab
	for j := 0; j < V; j++ {
		if la[j] != lb[j] {
			t.Fatalf("position 0 differs: %v vs %v", la[j], lb[j])
		}
	}
	same := true
	for j := V; j < len(la); j++ {
		same = same && la[j] == lb[j]
	}
	if same {
		t.Error("rope_scaling left every logit unchanged")
	}
}

// TestCheckpointVariants: a checkpoint in BF16, or sharded with an index,
// loads with the weights it holds; an unknown architecture or rope type is
// refused naming the field.
func TestCheckpointVariants(t *testing.T) {
	cfg := tinyConfigs()["llama-headdim-rope3"]
	m, err := New(cpu.New(1), cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	host := cpu.Data(m.params)
	tensors := hfTensors(t, m)
	cfgJSON, _ := json.Marshal(m.Cfg.toHF())

	t.Run("bf16", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "config.json"), cfgJSON, 0o644)
		writeBF16(t, filepath.Join(dir, "model.safetensors"), tensors)
		got, err := LoadHF(cpu.New(1), dir)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range cpu.Data(got.params) {
			if want := bf16Round(host[i]); v != want {
				t.Fatalf("weight %d: %v, want bf16(%v) = %v", i, v, host[i], want)
			}
		}
	})
	t.Run("sharded", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "config.json"), cfgJSON, 0o644)
		half := len(tensors) / 2
		weightMap := map[string]string{}
		for i, part := range [][]safetensors.Tensor{tensors[:half], tensors[half:]} {
			name := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}[i]
			var b bytes.Buffer
			if err := safetensors.Write(&b, part, nil); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644)
			for _, tt := range part {
				weightMap[tt.Name] = name
			}
		}
		idx, _ := json.Marshal(map[string]any{"weight_map": weightMap})
		os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), idx, 0o644)
		got, err := LoadHF(cpu.New(1), dir)
		if err != nil {
			t.Fatal(err)
		}
		if got.Cfg != m.Cfg {
			t.Fatalf("config %+v read back as %+v", m.Cfg, got.Cfg)
		}
		for i, v := range cpu.Data(got.params) {
			if v != host[i] {
				t.Fatalf("weight %d: %v, want %v", i, v, host[i])
			}
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct{ patch, want string }{
			{`"architectures": ["LlamaForSequenceClassification"]`, "architectures"},
			{`"rope_scaling": {"rope_type": "yarn", "factor": 4}`, "rope_scaling"},
			{`"head_dim": 7`, "head_dim"},
			{`"hidden_act": "gelu"`, "hidden_act"},
			{`"mlp_bias": true`, "mlp_bias"},
			{`"use_sliding_window": true`, "use_sliding_window"},
			{`"use_mrope": true`, "use_mrope"},
		} {
			dir := t.TempDir()
			// appended last: JSON's last duplicate key wins
			body := strings.TrimSuffix(strings.TrimSpace(string(cfgJSON)), "}") + "," + tc.patch + "}"

			os.WriteFile(filepath.Join(dir, "config.json"), []byte(body), 0o644)
			if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err = %v, want it to name %s", tc.patch, err, tc.want)
			}
		}
	})
}

func bf16Round(f float32) float32 {
	b := math.Float32bits(f)
	b += 0x7FFF + (b>>16)&1 // round to nearest even
	return math.Float32frombits(b &^ 0xFFFF)
}

// writeBF16 writes tensors as a safetensors file of BF16 values.
func writeBF16(t *testing.T, path string, tensors []safetensors.Tensor) {
	header := map[string]any{}
	var data []byte
	for _, tt := range tensors {
		shape := make([]int64, len(tt.Shape))
		for i, d := range tt.Shape {
			shape[i] = int64(d)
		}
		off := len(data)
		for _, v := range tt.Data {
			data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(bf16Round(v))>>16))
		}
		header[tt.Name] = map[string]any{"dtype": "BF16", "shape": shape, "data_offsets": []int{off, len(data)}}
	}
	hj, _ := json.Marshal(header)
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hj)))
	out = append(append(out, hj...), data...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// hfTensors is the model's checkpoint tensors, in float32.
func hfTensors(t *testing.T, m *Model) []safetensors.Tensor {
	var out []safetensors.Tensor
	for _, h := range m.hfLayout() {
		data, err := m.hfData(h)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, safetensors.Tensor{Name: h.name, Shape: h.shape, Data: data})
	}
	return out
}
