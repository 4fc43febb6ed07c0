package model

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/internal/atomicfile"
	"github.com/corl-project/corl/safetensors"
)

// Hugging Face checkpoints: config.json plus model.safetensors (or shards with
// model.safetensors.index.json), tensor names as transformers writes them.
// GPT-2 stores its projections as Conv1D, (in, out), with q/k/v fused into
// c_attn; Llama stores gate_proj and up_proj separately. The mapping below
// converts in both directions, so a saved model reads back bitwise identical.

type hfConfig struct {
	ModelType     string   `json:"model_type"`
	Architectures []string `json:"architectures,omitempty"`
	// llama / qwen2 names
	HiddenSize       int     `json:"hidden_size,omitempty"`
	Intermediate     int     `json:"intermediate_size,omitempty"`
	NumLayers        int     `json:"num_hidden_layers,omitempty"`
	NumHeads         int     `json:"num_attention_heads,omitempty"`
	NumKVHeads       int     `json:"num_key_value_heads,omitempty"`
	MaxPositions     int     `json:"max_position_embeddings,omitempty"`
	RMSNormEps       float32 `json:"rms_norm_eps,omitempty"`
	RopeTheta        float32 `json:"rope_theta,omitempty"`
	AttentionBias    *bool   `json:"attention_bias,omitempty"`
	TieWordEmbedding *bool   `json:"tie_word_embeddings,omitempty"`
	VocabSize        int     `json:"vocab_size"`
	InitRange        float32 `json:"initializer_range,omitempty"`
	HeadDim          int     `json:"head_dim,omitempty"`
	RopeScaling      *hfRope `json:"rope_scaling,omitempty"`
	HiddenAct        string  `json:"hidden_act,omitempty"`
	MLPBias          *bool   `json:"mlp_bias,omitempty"`
	UseSlidingWindow *bool   `json:"use_sliding_window,omitempty"`
	UseMRoPE         *bool   `json:"use_mrope,omitempty"`
	// gpt2 names
	NLayer      int     `json:"n_layer,omitempty"`
	NEmbd       int     `json:"n_embd,omitempty"`
	NHead       int     `json:"n_head,omitempty"`
	NPositions  int     `json:"n_positions,omitempty"`
	NInner      *int    `json:"n_inner,omitempty"`
	LayerNormEp float32 `json:"layer_norm_epsilon,omitempty"`
	Activation  string  `json:"activation_function,omitempty"`
}

// hfRope is rope_scaling as config.json writes it ("type" in older files,
// "rope_type" in newer ones).
type hfRope struct {
	Type                 string  `json:"type,omitempty"`
	RopeType             string  `json:"rope_type,omitempty"`
	Factor               float32 `json:"factor,omitempty"`
	LowFreqFactor        float32 `json:"low_freq_factor,omitempty"`
	HighFreqFactor       float32 `json:"high_freq_factor,omitempty"`
	OriginalMaxPositions int     `json:"original_max_position_embeddings,omitempty"`
}

// architectures each model_type may name (a checkpoint of another
// architecture with a familiar model_type is refused, not misread).
var knownArchitectures = map[string][]string{
	"gpt2":    {"GPT2LMHeadModel", "GPT2Model"},
	"llama":   {"LlamaForCausalLM", "LlamaModel"},
	"qwen2":   {"Qwen2ForCausalLM", "Qwen2Model"},
	"mistral": {"MistralForCausalLM", "MistralModel"},
}

func (c Config) toHF() hfConfig {
	if c.Family == GPT2 {
		inner := c.Hidden
		return hfConfig{ModelType: "gpt2", Architectures: []string{"GPT2LMHeadModel"}, NLayer: c.Layers, NEmbd: c.Dim, NHead: c.Heads,
			NPositions: c.MaxSeq, NInner: &inner, LayerNormEp: c.NormEps, VocabSize: c.Vocab, Activation: "gelu_new", InitRange: c.InitStdDev}
	}
	typ, arch := "llama", "LlamaForCausalLM"
	if c.QKVBias {
		typ, arch = "qwen2", "Qwen2ForCausalLM"
	}
	tied, bias := c.TiedEmbed, c.QKVBias
	h := hfConfig{ModelType: typ, Architectures: []string{arch}, HiddenSize: c.Dim, Intermediate: c.Hidden, NumLayers: c.Layers,
		NumHeads: c.Heads, NumKVHeads: c.KVHeads, MaxPositions: c.MaxSeq, RMSNormEps: c.NormEps, RopeTheta: c.RopeTheta,
		AttentionBias: &bias, TieWordEmbedding: &tied, VocabSize: c.Vocab, InitRange: c.InitStdDev, HeadDim: c.HeadDim}
	if rs := c.RopeScaling; rs.Type != "" {
		h.RopeScaling = &hfRope{RopeType: rs.Type, Factor: rs.Factor, LowFreqFactor: rs.LowFreqFactor, HighFreqFactor: rs.HighFreqFactor,
			OriginalMaxPositions: rs.OriginalMaxPositions}
	}
	return h
}

func (h hfConfig) toConfig() (Config, error) {
	if known, ok := knownArchitectures[h.ModelType]; ok {
		for _, a := range h.Architectures {
			if !slices.Contains(known, a) {
				return Config{}, fmt.Errorf("architectures: %q is not a %s architecture corl implements (%s)", a, h.ModelType, strings.Join(known, ", "))
			}
		}
	}
	switch h.ModelType {
	case "gpt2":
		c := Config{Family: GPT2, Layers: h.NLayer, Dim: h.NEmbd, Heads: h.NHead, Vocab: h.VocabSize, MaxSeq: h.NPositions,
			NormEps: h.LayerNormEp, InitStdDev: h.InitRange, TiedEmbed: true}
		if h.NInner != nil {
			c.Hidden = *h.NInner
		}
		return c, nil
	case "llama", "qwen2", "mistral":
		switch {
		case h.HiddenAct != "" && h.HiddenAct != "silu":
			return Config{}, fmt.Errorf("hidden_act: %q; corl's llama family is SwiGLU (silu)", h.HiddenAct)
		case h.MLPBias != nil && *h.MLPBias:
			return Config{}, fmt.Errorf("mlp_bias: true; corl's llama family has no MLP biases")
		case h.UseSlidingWindow != nil && *h.UseSlidingWindow:
			return Config{}, fmt.Errorf("use_sliding_window: true; corl attends over the whole context")
		case h.UseMRoPE != nil && *h.UseMRoPE:
			return Config{}, fmt.Errorf("use_mrope: true; corl's rotary embeddings are one-dimensional")
		}
		c := Config{Family: Llama, Layers: h.NumLayers, Dim: h.HiddenSize, Heads: h.NumHeads, KVHeads: h.NumKVHeads,
			Hidden: h.Intermediate, Vocab: h.VocabSize, MaxSeq: h.MaxPositions, RopeTheta: h.RopeTheta, NormEps: h.RMSNormEps,
			InitStdDev: h.InitRange, QKVBias: h.ModelType == "qwen2"}
		if h.AttentionBias != nil {
			c.QKVBias = *h.AttentionBias
		}
		if h.TieWordEmbedding != nil {
			c.TiedEmbed = *h.TieWordEmbedding
		}
		if h.HeadDim > 0 && h.HeadDim != h.HiddenSize/max(h.NumHeads, 1) {
			c.HeadDim = h.HeadDim
		}
		if rs := h.RopeScaling; rs != nil {
			c.RopeScaling = RopeScaling{Type: cmp.Or(rs.RopeType, rs.Type), Factor: rs.Factor, LowFreqFactor: rs.LowFreqFactor,
				HighFreqFactor: rs.HighFreqFactor, OriginalMaxPositions: rs.OriginalMaxPositions}
		}
		return c, nil
	}
	return Config{}, fmt.Errorf("model_type: %q is not supported (gpt2, llama, qwen2, mistral)", h.ModelType)
}

// ReadConfig reads a Hugging Face config.json.
func ReadConfig(dir string) (Config, error) {
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("model config: %w", err)
	}
	return ParseConfig(path, data)
}

// hfTensor is one checkpoint tensor and how it maps onto internal tensors:
// parts are concatenated along the output dimension (rows of the internal
// (out, in) matrices); half >= 0 selects the first or second half of a single
// part's rows (Llama's gate and up inside the fused gate_up matrix);
// transposed marks GPT-2's Conv1D (in, out) layout.
type hfTensor struct {
	name       string
	shape      []int
	parts      []int // internal tensor indexes
	half       int
	transposed bool
}

func (m *Model) hfLayout() []hfTensor {
	var out []hfTensor
	lo := m.lo
	one := func(i int) hfTensor {
		t := lo.tensors[i]
		return hfTensor{name: t.Name, shape: t.Shape, parts: []int{i}, half: -1}
	}
	if m.Cfg.Family == GPT2 {
		C := m.Cfg.Dim
		conv := func(name string, in, outDim int, parts ...int) hfTensor {
			return hfTensor{name: name, shape: []int{in, outDim}, parts: parts, half: -1, transposed: true}
		}
		vec := func(name string, n int, parts ...int) hfTensor {
			return hfTensor{name: name, shape: []int{n}, parts: parts, half: -1}
		}
		out = append(out, one(lo.wte), one(lo.wpe))
		for l, lp := range lo.layers {
			p := fmt.Sprintf("h.%d.", l)
			out = append(out, one(lp.norm1w), one(lp.norm1b),
				conv(p+"attn.c_attn.weight", C, 3*C, lp.wq, lp.wk, lp.wv), vec(p+"attn.c_attn.bias", 3*C, lp.bq, lp.bk, lp.bv),
				conv(p+"attn.c_proj.weight", C, C, lp.wo), one(lp.bo),
				one(lp.norm2w), one(lp.norm2b),
				conv(p+"mlp.c_fc.weight", C, m.Cfg.Hidden, lp.wfc), one(lp.bfc),
				conv(p+"mlp.c_proj.weight", m.Cfg.Hidden, C, lp.wproj), one(lp.bproj))
		}
		return append(out, one(lo.normfW), one(lo.normfB))
	}
	for i, t := range lo.tensors {
		if !strings.HasSuffix(t.Name, "mlp.gate_up_proj.weight") {
			out = append(out, one(i))
			continue
		}
		base := strings.TrimSuffix(t.Name, "gate_up_proj.weight")
		H, C := t.Shape[0]/2, t.Shape[1]
		out = append(out, hfTensor{name: base + "gate_proj.weight", shape: []int{H, C}, parts: []int{i}, half: 0},
			hfTensor{name: base + "up_proj.weight", shape: []int{H, C}, parts: []int{i}, half: 1})
	}
	return out
}

// hfRanges returns the ranges of the parameter array (offset, length) that
// an hfTensor covers, in order, and the row length (columns of the internal
// matrices).
func (m *Model) hfRanges(h hfTensor) (ranges [][2]int, cols int) {
	if h.half >= 0 {
		t := m.lo.tensors[h.parts[0]]
		n := t.Size() / 2
		return [][2]int{{t.Off + h.half*n, n}}, t.Shape[1]
	}
	for _, i := range h.parts {
		t := m.lo.tensors[i]
		ranges = append(ranges, [2]int{t.Off, t.Size()})
		cols = t.Shape[len(t.Shape)-1]
	}
	return ranges, cols
}

// hfData returns one checkpoint tensor's values, downloaded from the
// parameters, in the checkpoint's layout.
func (m *Model) hfData(h hfTensor) ([]float32, error) {
	ranges, cols := m.hfRanges(h)
	n := 0
	for _, r := range ranges {
		n += r[1]
	}
	data := make([]float32, n)
	at := data
	for _, r := range ranges {
		m.be.Download(at[:r[1]], m.params.Slice(r[0], r[1]))
		at = at[r[1]:]
	}
	if err := m.be.Sync(); err != nil {
		return nil, err
	}
	if h.transposed { // internal (out, in) -> Conv1D (in, out)
		data = transpose(data, len(data)/cols, cols)
	}
	return data, nil
}

// setHFData puts one checkpoint tensor's values into the parameters.
func (m *Model) setHFData(h hfTensor, data []float32) error {
	ranges, cols := m.hfRanges(h)
	if h.transposed { // Conv1D (in, out) -> internal (out, in)
		data = transpose(data, cols, len(data)/cols)
	}
	for _, r := range ranges {
		m.be.Upload(m.params.Slice(r[0], r[1]), data[:r[1]])
		data = data[r[1]:]
	}
	return m.be.Sync()
}

// transpose returns the (cols, rows) transpose of a (rows, cols) matrix.
func transpose(x []float32, rows, cols int) []float32 {
	t := make([]float32, len(x))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			t[c*rows+r] = x[r*cols+c]
		}
	}
	return t
}

// hfSource is the checkpoint a model was loaded from, kept so that SaveHF
// writes the same files: config.json and the other JSON files as read, and
// each weight file under its own header (names, dtypes, order, metadata),
// with the model's current values.
type hfSource struct {
	cfg    Config
	files  map[string][]byte // file name -> contents as read
	shards []hfShard
	// tensors maps each checkpoint tensor name to what it holds; buffers
	// holds the values of the non-parameter ones, written back as read.
	tensors map[string]hfTensor
	buffers map[string][]float32
}

type hfShard struct {
	file   string
	layout safetensors.Layout
}

// hfSideFiles are the files SaveHF copies from the checkpoint as read.
var hfSideFiles = []string{"config.json", "generation_config.json", "model.safetensors.index.json"}

// rounded reports whether the checkpoint stores weights in fewer bits than
// float32 (then SaveOptimizer keeps the float32 master weights).
func (s *hfSource) rounded() bool {
	for _, sh := range s.shards {
		for _, in := range sh.layout.Infos() {
			if in.DType != safetensors.F32 {
				return true
			}
		}
	}
	return false
}

// StoredAs is the element type SaveHF writes the weights in: the
// checkpoint's (the most common one if it mixes them), F32 for a new model.
func (m *Model) StoredAs() safetensors.DType {
	if m.src == nil {
		return safetensors.F32
	}
	count := map[safetensors.DType]int{}
	best := safetensors.F32
	for _, sh := range m.src.shards {
		for _, in := range sh.layout.Infos() {
			count[in.DType] += in.Elements()
			if count[in.DType] > count[best] {
				best = in.DType
			}
		}
	}
	return best
}

// SaveHF writes the model as a Hugging Face checkpoint into dir (created if
// needed). A model LoadHF read is written in that checkpoint's layout: its
// JSON files as they were, its shards with their names, dtypes (bfloat16
// stays bfloat16, rounded to nearest even) and headers, so a model saved
// unchanged is its checkpoint byte for byte. A new model is written as
// float32 in config.json and model.safetensors.
func (m *Model) SaveHF(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if src := m.src; src != nil && src.cfg == m.Cfg {
		for _, name := range hfSideFiles {
			if data, ok := src.files[name]; ok {
				if err := writeAtomic(filepath.Join(dir, name), func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
					return err
				}
			}
		}
		for _, sh := range src.shards {
			err := writeAtomic(filepath.Join(dir, sh.file), func(w io.Writer) error {
				return sh.layout.Write(w, func(in safetensors.Info) ([]float32, error) {
					if v, ok := src.buffers[in.Name]; ok {
						return v, nil
					}
					return m.hfData(src.tensors[in.Name])
				})
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	cfg, err := json.MarshalIndent(m.Cfg.toHF(), "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, "config.json"), func(w io.Writer) error { _, err := w.Write(append(cfg, '\n')); return err }); err != nil {
		return err
	}
	var ts []safetensors.Tensor
	for _, h := range m.hfLayout() {
		data, err := m.hfData(h)
		if err != nil {
			return err
		}
		ts = append(ts, safetensors.Tensor{Name: h.name, Shape: h.shape, Data: data})
	}
	return writeAtomic(filepath.Join(dir, "model.safetensors"), func(w io.Writer) error {
		return safetensors.Write(w, ts, map[string]string{"format": "pt"})
	})
}

// LoadHF builds a model from a Hugging Face checkpoint directory: config.json,
// model.safetensors or the shards model.safetensors.index.json names (F32,
// BF16, F16 or F64), and generation_config.json when present. Every
// tensor of the architecture must be present with its exact shape; tensors
// the architecture does not use are an error, except known non-parameter
// buffers and a tied model's copy of its embedding as lm_head.weight.
// Weights are read one file at a time into the backend, so loading needs
// host memory for the largest shard, not the model.
//
// A directory with a ChecksumsFile must match it. Whatever the directory,
// a tensor holding NaN or Inf is refused, and one with absurd magnitudes
// is reported in Warnings.
func LoadHF(be gpu.Backend, dir string) (*Model, error) {
	if err := VerifyChecksums(dir); err != nil {
		return nil, err
	}
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	m, err := alloc(be, cfg)
	if err != nil {
		return nil, err
	}
	if m.Generation, err = ReadGeneration(dir); err != nil {
		return nil, err
	}
	for _, id := range append([]int32{m.Generation.BOS}, m.Generation.EOS...) {
		if id >= int32(cfg.Vocab) {
			return nil, fmt.Errorf("%s: token id %d in generation_config.json (or config.json) is past vocab_size %d", dir, id, cfg.Vocab)
		}
	}
	src := &hfSource{cfg: m.Cfg, files: map[string][]byte{}, tensors: map[string]hfTensor{}, buffers: map[string][]float32{}}
	for _, name := range hfSideFiles {
		if data, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			src.files[name] = data
		}
	}
	shards, err := weightFiles(dir)
	if err != nil {
		return nil, err
	}
	want := map[string]hfTensor{}
	for _, h := range m.hfLayout() {
		want[h.name] = h
	}
	tiedHead := m.lo.lmHead == m.lo.wte
	found := map[string]string{} // architecture name -> checkpoint name
	var unexpected []string
	for _, file := range shards {
		path := filepath.Join(dir, file)
		f, err := safetensors.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for _, in := range f.Infos() {
			name := strings.TrimPrefix(in.Name, "transformer.")
			h, ok := want[name]
			switch {
			case !ok && tiedHead && name == "lm_head.weight":
				src.tensors[in.Name] = want[m.lo.tensors[m.lo.wte].Name]
				continue // the embedding is read under its own name
			case !ok && ignorableBuffer(name):
				if src.buffers[in.Name], err = f.Float32(in.Name); err != nil {
					return nil, err
				}
				continue
			case !ok:
				unexpected = append(unexpected, in.Name)
				continue
			}
			if prev, dup := found[name]; dup {
				return nil, fmt.Errorf("%s: tensor %q is stored twice (as %q too)", dir, in.Name, prev)
			}
			found[name] = in.Name
			src.tensors[in.Name] = h
			if fmt.Sprint(in.Shape) != fmt.Sprint(h.shape) {
				return nil, fmt.Errorf("%s: tensor %q has shape %v, config.json implies %v", path, in.Name, in.Shape, h.shape)
			}
			data, err := f.Float32(in.Name)
			if err != nil {
				return nil, err
			}
			warning, err := checkWeights(path, in.Name, data)
			if err != nil {
				return nil, err
			}
			if warning != "" {
				m.Warnings = append(m.Warnings, warning)
			}
			if err := m.setHFData(h, data); err != nil {
				return nil, err
			}
		}
		src.shards = append(src.shards, hfShard{file: file, layout: f.Layout()})
	}
	if len(unexpected) > 0 {
		sort.Strings(unexpected)
		return nil, fmt.Errorf("%s: tensors the %s architecture does not use: %s", dir, cfg.Family, strings.Join(unexpected, ", "))
	}
	for _, h := range m.hfLayout() {
		if _, ok := found[h.name]; !ok {
			return nil, fmt.Errorf("%s: checkpoint has no tensor %q", dir, h.name)
		}
	}
	m.src = src
	return m, nil
}

// ignorableBuffer names non-parameter buffers older checkpoints carry.
func ignorableBuffer(name string) bool {
	return strings.HasSuffix(name, ".attn.bias") || strings.HasSuffix(name, ".attn.masked_bias") ||
		strings.HasSuffix(name, "rotary_emb.inv_freq")
}

// weightFiles names the model's weight files in dir: model.safetensors, or
// the shards model.safetensors.index.json lists, in name order.
func weightFiles(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
		return []string{"model.safetensors"}, nil
	}
	index := filepath.Join(dir, "model.safetensors.index.json")
	data, err := os.ReadFile(index)
	if err != nil {
		return nil, fmt.Errorf("%s: no model.safetensors or model.safetensors.index.json", dir)
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("%s: %w", index, err)
	}
	shards := map[string]bool{}
	for _, f := range idx.WeightMap {
		shards[f] = true
	}
	names := make([]string, 0, len(shards))
	for f := range shards {
		if filepath.Base(f) != f {
			return nil, fmt.Errorf("%s: shard %q must be a file name in the same directory", index, f)
		}
		names = append(names, f)
	}
	sort.Strings(names)
	return names, nil
}

// SaveOptimizer writes AdamW's moments (internal tensor names) and the step
// count to path, so a resumed run continues exactly. When SaveHF rounds the
// weights (a bfloat16 or float16 checkpoint), the float32 master weights
// are kept here too, as master/<name>. With adapters attached (LoRA) it
// holds theirs, under the adapters' names; the frozen weights need no
// master (they are the checkpoint's values).
func (m *Model) SaveOptimizer(path string) error {
	host := make([]float32, m.trainable())
	var ts []safetensors.Tensor
	for _, pair := range m.optimizerState(m.lora == nil && m.src != nil && m.src.rounded()) {
		m.be.Download(host, pair.buf)
		if err := m.be.Sync(); err != nil {
			return err
		}
		for _, t := range m.trainTensors() {
			ts = append(ts, safetensors.Tensor{Name: pair.prefix + t.Name, Shape: t.Shape, Data: append([]float32(nil), host[t.Off:t.Off+t.Size()]...)})
		}
	}
	return writeAtomic(path, func(w io.Writer) error {
		return safetensors.Write(w, ts, map[string]string{"step": strconv.Itoa(m.step)})
	})
}

// LoadOptimizer restores what SaveOptimizer wrote, the master weights
// included when it kept them.
func (m *Model) LoadOptimizer(path string) error {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return err
	}
	step, err := strconv.Atoi(f.Metadata["step"])
	if err != nil || step < 0 {
		return fmt.Errorf("%s: metadata step %q is not a step count", path, f.Metadata["step"])
	}
	host := make([]float32, m.trainable())
	_, master := f.Info("master/" + m.lo.tensors[0].Name)
	for _, pair := range m.optimizerState(master && m.lora == nil) {
		for _, t := range m.trainTensors() {
			d, err := f.Float32(pair.prefix + t.Name)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if len(d) != t.Size() {
				return fmt.Errorf("%s: %s%s has %d values, want %d", path, pair.prefix, t.Name, len(d), t.Size())
			}
			copy(host[t.Off:], d)
		}
		m.be.Upload(pair.buf, host)
	}
	m.step = step
	return m.be.Sync()
}

// stateBuffer is one buffer of the optimizer file, under its name prefix.
type stateBuffer struct {
	prefix string
	buf    gpu.Buffer
}

// trainTensors are the tensors the optimizer steps: the adapters' when
// attached (LoRA), else the weights.
func (m *Model) trainTensors() []Tensor {
	if m.lora != nil {
		return m.lora.tensors
	}
	return m.lo.tensors
}

// optimizerState lists what the optimizer file holds: AdamW's moments, and
// the master weights when master is set.
func (m *Model) optimizerState(master bool) []stateBuffer {
	s := []stateBuffer{{"exp_avg/", m.m}, {"exp_avg_sq/", m.v}}
	if master {
		s = append(s, stateBuffer{"master/", m.params})
	}
	return s
}

var writeAtomic = atomicfile.Write
