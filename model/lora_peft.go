package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/corl-project/corl/safetensors"
)

// PEFT's file names in an adapter directory.
const (
	loraConfigFile  = "adapter_config.json"
	loraWeightsFile = "adapter_model.safetensors"
)

// peftConfig is the part of PEFT's adapter_config.json corl writes and
// reads; the fields it does not support must be absent or at their
// defaults, and LoadLoRA says which is not.
type peftConfig struct {
	PEFTType      string   `json:"peft_type"`
	TaskType      string   `json:"task_type"`
	R             int      `json:"r"`
	LoraAlpha     float64  `json:"lora_alpha"`
	TargetModules []string `json:"target_modules"`
	LoraDropout   float64  `json:"lora_dropout"`
	Bias          string   `json:"bias"`
	FanInFanOut   bool     `json:"fan_in_fan_out"`
	UseRSLoRA     bool     `json:"use_rslora"`
	UseDoRA       bool     `json:"use_dora"`
	InferenceMode bool     `json:"inference_mode"`
	BaseModel     string   `json:"base_model_name_or_path"`
	ModulesToSave []string `json:"modules_to_save"`
}

// SaveLoRA writes the attached adapters to dir in PEFT's layout:
// adapter_config.json and adapter_model.safetensors, float32 tensors named
// base_model.model.model.layers.L.<self_attn|mlp>.<module>.lora_A.weight
// (r, in) and lora_B.weight (out, r), which PEFT's
// PeftModel.from_pretrained loads onto the base checkpoint. base is
// written as base_model_name_or_path (may be empty).
func (m *Model) SaveLoRA(dir, base string) error {
	st := m.lora
	if st == nil {
		return fmt.Errorf("save lora: the model has no adapters")
	}
	host, err := m.LoRAParams()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save lora: %w", err)
	}
	var ts []safetensors.Tensor
	r := st.cfg.Rank
	for _, ads := range st.layers {
		for _, ad := range ads {
			a, b := st.tensors[ad.a], st.tensors[ad.b]
			ts = append(ts, safetensors.Tensor{Name: a.Name, Shape: a.Shape, Data: host[a.Off : a.Off+a.Size()], DType: safetensors.F32})
			// B's own rows: for gate_proj and up_proj, its half of the fused matrix.
			first := 0
			if ad.padRows > 0 && ad.padFrom == 0 {
				first = ad.padRows
			}
			ts = append(ts, safetensors.Tensor{Name: b.Name, Shape: []int{ad.out, r}, Data: host[b.Off+first*r : b.Off+(first+ad.out)*r], DType: safetensors.F32})
		}
	}
	targets := slices.Clone(st.cfg.Targets)
	slices.Sort(targets)
	cfg := peftConfig{PEFTType: "LORA", TaskType: "CAUSAL_LM", R: r, LoraAlpha: st.cfg.Alpha, TargetModules: targets,
		Bias: "none", InferenceMode: true, BaseModel: base}
	cj, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, loraWeightsFile), func(w io.Writer) error {
		return safetensors.Write(w, ts, map[string]string{"format": "pt"})
	}); err != nil {
		return fmt.Errorf("save lora: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, loraConfigFile), func(w io.Writer) error { _, err := w.Write(append(cj, '\n')); return err }); err != nil {
		return fmt.Errorf("save lora: %w", err)
	}
	return nil
}

// ReadLoRAConfig reads a PEFT adapter directory's adapter_config.json,
// refusing what corl's adapters do not implement (naming the field).
func ReadLoRAConfig(dir string) (LoRA, error) {
	path := filepath.Join(dir, loraConfigFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return LoRA{}, fmt.Errorf("lora: %w", err)
	}
	var pc peftConfig
	if err := json.Unmarshal(data, &pc); err != nil {
		return LoRA{}, fmt.Errorf("lora: %s: %w", path, err)
	}
	for _, bad := range []struct {
		is   bool
		what string
	}{
		{pc.PEFTType != "LORA", fmt.Sprintf("peft_type %q: only LORA adapters are read", pc.PEFTType)},
		{pc.TaskType != "" && pc.TaskType != "CAUSAL_LM", fmt.Sprintf("task_type %q: want CAUSAL_LM", pc.TaskType)},
		{pc.Bias != "" && pc.Bias != "none", fmt.Sprintf("bias %q: trained biases are not supported (want none)", pc.Bias)},
		{pc.FanInFanOut, "fan_in_fan_out true: GPT-2's Conv1D layout is not supported"},
		{pc.UseRSLoRA, "use_rslora true: only lora_alpha/r scaling is supported"},
		{pc.UseDoRA, "use_dora true: DoRA is not supported"},
		{len(pc.ModulesToSave) > 0, fmt.Sprintf("modules_to_save %v: fully trained modules are not supported", pc.ModulesToSave)},
	} {
		if bad.is {
			return LoRA{}, fmt.Errorf("lora: %s: %s", path, bad.what)
		}
	}
	c := LoRA{Rank: pc.R, Alpha: pc.LoraAlpha, Targets: pc.TargetModules}
	if err := c.Validate(); err != nil {
		return LoRA{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// LoadLoRA attaches the adapters of a PEFT directory (adapter_config.json
// and adapter_model.safetensors, as SaveLoRA or PEFT writes them) to the
// model, every tensor's name and shape checked against the model's
// layers.
func (m *Model) LoadLoRA(dir string) error {
	cfg, err := ReadLoRAConfig(dir)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, loraWeightsFile)
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	if err := m.AttachLoRA(cfg, 0); err != nil {
		return err
	}
	st := m.lora
	host := make([]float32, st.total)
	seen := map[string]bool{}
	r := cfg.Rank
	load := func(name string, shape []int, dst []float32) error {
		in, ok := f.Info(name)
		if !ok {
			return fmt.Errorf("no tensor %s (target_modules names %s)", name, strings.Join(cfg.Targets, ", "))
		}
		if !slices.Equal(in.Shape, shape) {
			return fmt.Errorf("tensor %s has shape %v, want %v for this model", name, in.Shape, shape)
		}
		v, err := f.Float32(name)
		if err != nil {
			return err
		}
		copy(dst, v)
		seen[name] = true
		return nil
	}
	for _, ads := range st.layers {
		for _, ad := range ads {
			a, b := st.tensors[ad.a], st.tensors[ad.b]
			first := 0
			if ad.padRows > 0 && ad.padFrom == 0 {
				first = ad.padRows
			}
			err := errors.Join(load(a.Name, a.Shape, host[a.Off:a.Off+a.Size()]),
				load(b.Name, []int{ad.out, r}, host[b.Off+first*r:b.Off+(first+ad.out)*r]))
			if err != nil {
				m.detachLoRA()
				return fmt.Errorf("lora: %s: %w", path, err)
			}
		}
	}
	for _, in := range f.Infos() {
		if !seen[in.Name] {
			m.detachLoRA()
			return fmt.Errorf("lora: %s: tensor %s is not an adapter of this model's targets (%s)", path, in.Name, strings.Join(cfg.Targets, ", "))
		}
	}
	if err := m.SetLoRAParams(host); err != nil {
		m.detachLoRA()
		return err
	}
	return nil
}

// detachLoRA drops the adapters unmerged (a failed load).
func (m *Model) detachLoRA() {
	m.be.Free(m.lora.params)
	m.lora = nil
	m.resizeTrainState()
}
