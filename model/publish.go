package model

import (
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/corl-project/corl/safetensors"
)

// shapes holds published checkpoints' config.json, so that a model of
// exactly their shape can be built with random weights (corl model random)
// or planned (corl model plan): tests, benchmarks and memory plans at real
// sizes without downloading weights. qwen2.5-0.5b and llama-3.2-1b are
// config.json and generation_config.json as published; qwen2.5-1.5b, -3b
// and -7b hold the architecture fields of theirs, and their parameter
// counts are the published ones (TestShapesHavePublishedSizes).
//
//go:embed shapes
var shapes embed.FS

// ShapeNames lists the embedded shapes.
func ShapeNames() []string {
	entries, _ := fs.ReadDir(shapes, "shapes")
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// ShapeFiles returns an embedded shape's JSON files by file name.
func ShapeFiles(name string) (map[string][]byte, error) {
	entries, err := fs.ReadDir(shapes, "shapes/"+name)
	if err != nil {
		return nil, fmt.Errorf("shape %q: not one of %s", name, strings.Join(ShapeNames(), ", "))
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if files[e.Name()], err = fs.ReadFile(shapes, "shapes/"+name+"/"+e.Name()); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// ParseConfig reads a config.json's contents (path names it in errors).
func ParseConfig(path string, data []byte) (Config, error) {
	var h hfConfig
	if err := json.Unmarshal(data, &h); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	c, err := h.toConfig()
	if err == nil {
		c, err = c.Normalized()
	}
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// SaveHFAs writes the model as a new checkpoint in dir, as published ones
// are laid out: the weights in dtype, in one model.safetensors or split into
// shards files of about equal size (model-00001-of-0000N.safetensors, in
// tensor order) with model.safetensors.index.json; files are written as
// given (config.json among them; without it, corl's). Tensors are written
// one at a time from the backend. The model then saves (SaveHF) in this
// layout.
func (m *Model) SaveHFAs(dir string, dtype safetensors.DType, shards int, files map[string][]byte) error {
	if dtype.Size() == 0 || shards < 1 {
		return fmt.Errorf("save model: dtype %q and %d shards; want F32, BF16, F16 or F64 and at least one shard", dtype, shards)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if _, ok := files["config.json"]; !ok {
		cfg, err := json.MarshalIndent(m.Cfg.toHF(), "", "  ")
		if err != nil {
			return err
		}
		files = maps.Clone(files)
		if files == nil {
			files = map[string][]byte{}
		}
		files["config.json"] = append(cfg, '\n')
	}
	layout := m.hfLayout()
	parts := make([][]safetensors.Tensor, shards)
	total, at := 0, 0
	for _, h := range layout {
		total += elements(h.shape) * dtype.Size()
	}
	for _, h := range layout {
		i := min(at*shards/max(total, 1), shards-1)
		parts[i] = append(parts[i], safetensors.Tensor{Name: h.name, Shape: h.shape, DType: dtype})
		at += elements(h.shape) * dtype.Size()
	}
	src := &hfSource{cfg: m.Cfg, files: map[string][]byte{}, tensors: map[string]hfTensor{}, buffers: map[string][]float32{}}
	for _, h := range layout {
		src.tensors[h.name] = h
	}
	weightMap := map[string]string{}
	for i, part := range parts {
		if len(part) == 0 {
			return fmt.Errorf("save model: %d shards for %d tensors", shards, len(layout))
		}
		name := "model.safetensors"
		if shards > 1 {
			name = fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, shards)
		}
		lo, err := safetensors.NewLayout(part, map[string]string{"format": "pt"})
		if err != nil {
			return err
		}
		for _, t := range part {
			weightMap[t.Name] = name
		}
		src.shards = append(src.shards, hfShard{file: name, layout: lo})
	}
	if shards > 1 {
		index, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}, "", "  ")
		if err != nil {
			return err
		}
		files = maps.Clone(files)
		files["model.safetensors.index.json"] = append(index, '\n')
	}
	// The side files SaveHF writes from the source; the others here.
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if filepath.Base(name) != name {
			return fmt.Errorf("save model: file %q must be a name in the checkpoint directory", name)
		}
		data := files[name]
		if slices.Contains(hfSideFiles, name) {
			src.files[name] = data
			continue
		}
		if err := writeAtomic(filepath.Join(dir, name), func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return err
		}
	}
	prev := m.src
	m.src = src
	if err := m.SaveHF(dir); err != nil {
		m.src = prev
		return err
	}
	return nil
}

func elements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// PerturbVectors draws the norm weights and biases (initialised to ones and
// zeros) around those values (standard deviation 0.1, from seed), so that a
// comparison with another engine sees a norm or bias it reads wrongly or
// not at all.
func (m *Model) PerturbVectors(seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 11))
	for i, t := range m.lo.tensors {
		if len(t.Shape) != 1 {
			continue
		}
		v := m.view(m.params, i)
		host := make([]float32, t.Size())
		m.be.Download(host, v)
		if err := m.be.Sync(); err != nil {
			return err
		}
		for j := range host {
			host[j] += float32(r.NormFloat64() * 0.1)
		}
		m.be.Upload(v, host)
	}
	return m.be.Sync()
}
