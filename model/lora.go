package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/spec"
)

// LoRA is a low-rank adapter configuration, PEFT's LoraConfig: each
// targeted projection W (out x in) of every layer becomes W + s B A, with
// A (r x in) and B (out x r) trained and W frozen, s = alpha / r. Only the
// adapters have gradients and optimizer state, so a member too large for
// a full fine-tune trains in the memory of its weights and activations.
type LoRA struct {
	// Rank is r, the adapters' inner dimension (PEFT's r).
	Rank int `json:"r"`
	// Alpha scales the adapters' output by Alpha/Rank (PEFT's lora_alpha).
	Alpha float64 `json:"lora_alpha"`
	// Targets are the projections adapted, by their Hugging Face module
	// names (PEFT's target_modules): q_proj, k_proj, v_proj, o_proj,
	// gate_proj, up_proj, down_proj.
	Targets []string `json:"target_modules"`
}

// LoRAModules are the projections of a llama-family layer an adapter can
// target, in layer order.
var LoRAModules = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// loraModule is a projection as an index into LoRAModules: the forward
// and backward passes name the adapter they run by it.
type loraModule int

const (
	loraQ loraModule = iota
	loraK
	loraV
	loraO
	loraGate
	loraUp
	loraDown
)

// LoRAOf is a spec's adapter configuration as the model's: every
// projection when it names none, lora_alpha 2r when it gives none (0).
func LoRAOf(c spec.LoRA) LoRA {
	l := LoRA{Rank: c.R, Alpha: c.Alpha, Targets: c.TargetModules}
	if len(l.Targets) == 0 {
		l.Targets = LoRAModules
	}
	if l.Alpha == 0 {
		l.Alpha = 2 * float64(c.R)
	}
	return l
}

// Validate says what is wrong with the configuration, naming the field.
func (c LoRA) Validate() error {
	if c.Rank <= 0 {
		return fmt.Errorf("lora: r %d: want 1 or more", c.Rank)
	}
	if !(c.Alpha > 0) || math.IsInf(c.Alpha, 0) {
		return fmt.Errorf("lora: lora_alpha %v: want a finite number above 0", c.Alpha)
	}
	if len(c.Targets) == 0 {
		return fmt.Errorf("lora: target_modules is empty: name at least one of %s", strings.Join(LoRAModules, ", "))
	}
	seen := map[string]bool{}
	for _, t := range c.Targets {
		if !slices.Contains(LoRAModules, t) {
			return fmt.Errorf("lora: target_modules: %q is not a projection of a llama-family layer (want %s)", t, strings.Join(LoRAModules, ", "))
		}
		if seen[t] {
			return fmt.Errorf("lora: target_modules: %q is named twice", t)
		}
		seen[t] = true
	}
	return nil
}

// Scale is the adapters' output scale, Alpha / Rank.
func (c LoRA) Scale() float32 { return float32(c.Alpha / float64(c.Rank)) }

// adapter is one targeted projection of one layer.
type adapter struct {
	module  string
	a, b    int // tensor indexes in the adapter layout: A (r, in), B (rows, r)
	in, out int // the projection's input and output widths (gate_proj, up_proj: Hidden)
	// rows is B's row count in the buffer: out, or for gate_proj and
	// up_proj the fused gate|up width 2*Hidden, the other half's rows
	// held at zero (from padFrom, padRows), so the adapter's output adds
	// onto the fused matmul's as one matrix.
	rows             int
	padFrom, padRows int
}

// loraState is a model's attached adapters.
type loraState struct {
	cfg     LoRA
	scale   float32
	tensors []Tensor // PEFT names, offsets in params
	total   int      // adapter floats
	params  gpu.Buffer
	layers  [][]adapter // per layer, in LoRAModules order
	// at[l][mod] is module mod's adapter in layers[l], -1 when untargeted.
	at [][loraDown + 1]int
}

// adapterAt is layer l's adapter of mod, if it has one.
func (st *loraState) adapterAt(l int, mod loraModule) (adapter, bool) {
	i := st.at[l][mod]
	if i < 0 {
		return adapter{}, false
	}
	return st.layers[l][i], true
}

// loraLayout lays out the adapters of cfg for c: every targeted module of
// every layer, A then B, named as PEFT saves them.
func loraLayout(c Config, cfg LoRA) *loraState {
	st := &loraState{cfg: cfg, scale: cfg.Scale(), layers: make([][]adapter, c.Layers), at: make([][loraDown + 1]int, c.Layers)}
	QD, KVD, C, H := c.Heads*c.HeadSize(), c.KVHeads*c.HeadSize(), c.Dim, c.Hidden
	add := func(name string, shape ...int) int {
		t := Tensor{Name: name, Shape: shape, Off: st.total, Decay: true}
		st.tensors = append(st.tensors, t)
		st.total += t.Size()
		return len(st.tensors) - 1
	}
	for l := 0; l < c.Layers; l++ {
		for mi, mod := range LoRAModules {
			st.at[l][mi] = -1
			if !slices.Contains(cfg.Targets, mod) {
				continue
			}
			ad := adapter{module: mod}
			switch mod {
			case "q_proj":
				ad.in, ad.out = C, QD
			case "k_proj", "v_proj":
				ad.in, ad.out = C, KVD
			case "o_proj":
				ad.in, ad.out = QD, C
			case "gate_proj", "up_proj":
				ad.in, ad.out = C, H
			case "down_proj":
				ad.in, ad.out = H, C
			}
			ad.rows = ad.out
			switch mod {
			case "gate_proj":
				ad.rows, ad.padFrom, ad.padRows = 2*H, H, H
			case "up_proj":
				ad.rows, ad.padFrom, ad.padRows = 2*H, 0, H
			}
			prefix := fmt.Sprintf("base_model.model.model.layers.%d.%s.%s.", l, loraParent(mod), mod)
			ad.a = add(prefix+"lora_A.weight", cfg.Rank, ad.in)
			ad.b = add(prefix+"lora_B.weight", ad.rows, cfg.Rank)
			st.at[l][mi] = len(st.layers[l])
			st.layers[l] = append(st.layers[l], ad)
		}
	}
	return st
}

// loraParent is the Hugging Face submodule a projection belongs to.
func loraParent(mod string) string {
	switch mod {
	case "gate_proj", "up_proj", "down_proj":
		return "mlp"
	}
	return "self_attn"
}

// AttachLoRA freezes the model's weights and trains adapters of cfg from
// now on: Forward and Backward run through W + s B A, gradients and AdamW
// state cover the adapters alone, and Step updates only them. A starts as
// PEFT initialises it (uniform within +-1/sqrt(in), from seed), B at zero,
// so the adapted model starts as the base, bit for bit. The cached
// decoder (NewCache, Prefill, Decode) runs the adapters beside the
// weights too (as vLLM serves LoRA), so the model generates what it
// trains, the weights in whatever type the cache reads them.
// Adapters are for the llama family (Llama, Qwen2), whose module names
// PEFT's target_modules use.
func (m *Model) AttachLoRA(cfg LoRA, seed uint64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if m.Cfg.Family != Llama {
		return fmt.Errorf("lora: family %s: adapters are for the llama family (Llama, Qwen2)", m.Cfg.Family)
	}
	if m.lora != nil {
		return fmt.Errorf("lora: the model has adapters already (MergeLoRA folds them in first)")
	}
	st := loraLayout(m.Cfg, cfg)
	host := make([]float32, st.total)
	r := rand.New(rand.NewPCG(seed, 0x6c6f7261))
	for _, ads := range st.layers {
		for _, ad := range ads {
			t := st.tensors[ad.a]
			bound := 1 / math.Sqrt(float64(ad.in))
			for j := range t.Size() {
				host[t.Off+j] = float32((2*r.Float64() - 1) * bound)
			}
		}
	}
	st.params = m.be.Alloc(st.total)
	m.be.Upload(st.params, host)
	m.lora = st
	m.resizeTrainState()
	return m.be.Sync()
}

// resizeTrainState gives the model gradients and AdamW moments for what
// it trains now (the adapters, or every weight), and forgets the passes'
// gradients and the optimizer's steps.
func (m *Model) resizeTrainState() {
	for _, b := range []gpu.Buffer{m.grads, m.m, m.v} {
		m.be.Free(b)
	}
	m.grads, m.m, m.v = m.be.Alloc(m.gradLen()), m.be.Alloc(m.trainable()), m.be.Alloc(m.trainable())
	m.be.Zero(m.m)
	m.be.Zero(m.v)
	m.be.Zero(m.grads)
	m.own.grads = m.grads
	for _, p := range append([]*Pass{&m.scratch}, m.parts...) {
		if p.grads != nil {
			m.be.Free(p.grads)
			p.grads = nil
		}
	}
	m.step = 0
}

// trainable is the number of floats the optimizer steps: the adapters'
// when attached, else every weight.
func (m *Model) trainable() int {
	if m.lora != nil {
		return m.lora.total
	}
	return m.lo.total
}

// gradLen is the length of a gradient buffer: the trainable floats, and
// with adapters a norm-sized tail where the frozen norms' gradients (which
// the norm kernels always write) are discarded.
func (m *Model) gradLen() int {
	if m.lora != nil {
		return m.lora.total + m.Cfg.Dim
	}
	return m.lo.total
}

// LoRAConfig is the attached adapters' configuration (false: none).
func (m *Model) LoRAConfig() (LoRA, bool) {
	if m.lora == nil {
		return LoRA{}, false
	}
	return m.lora.cfg, true
}

// LoRATensors lists the adapters' tensors in buffer order, named as PEFT
// saves them (nil without adapters).
func (m *Model) LoRATensors() []Tensor {
	if m.lora == nil {
		return nil
	}
	return m.lora.tensors
}

// LoRAParams returns the adapters' values on the host, in LoRATensors'
// order.
func (m *Model) LoRAParams() ([]float32, error) {
	if m.lora == nil {
		return nil, fmt.Errorf("lora: the model has no adapters")
	}
	host := make([]float32, m.lora.total)
	m.be.Download(host, m.lora.params)
	return host, m.be.Sync()
}

// SetLoRAParams puts back adapter values LoRAParams returned. The rows of
// a gate_proj or up_proj B outside its half of the fused matrix must be
// zero.
func (m *Model) SetLoRAParams(host []float32) error {
	if m.lora == nil {
		return fmt.Errorf("lora: the model has no adapters")
	}
	if len(host) != m.lora.total {
		return fmt.Errorf("lora: %d values for adapters of %d", len(host), m.lora.total)
	}
	for _, ads := range m.lora.layers {
		for _, ad := range ads {
			t := m.lora.tensors[ad.b]
			r := m.lora.cfg.Rank
			for j, v := range host[t.Off+ad.padFrom*r : t.Off+(ad.padFrom+ad.padRows)*r] {
				if v != 0 {
					return fmt.Errorf("lora: %s: row %d is outside %s's half of the fused gate|up matrix and must be 0 (is %v)", t.Name, ad.padFrom+j/r, ad.module, v)
				}
			}
		}
	}
	m.be.Upload(m.lora.params, host)
	return m.be.Sync()
}

// LoRAGrads returns the adapters' accumulated gradient on the host.
func (m *Model) LoRAGrads() ([]float32, error) {
	if m.lora == nil {
		return nil, fmt.Errorf("lora: the model has no adapters")
	}
	host := make([]float32, m.lora.total)
	m.be.Download(host, m.grads.Slice(0, m.lora.total))
	return host, m.be.Sync()
}

// MergeLoRA folds the adapters into the weights, W += s B A (on the host,
// in float64 sums), and detaches them: the model is a plain model again,
// every weight trainable, its optimizer state fresh. What it then saves
// (SaveHF) is the merged checkpoint.
func (m *Model) MergeLoRA() error {
	st := m.lora
	if st == nil {
		return fmt.Errorf("lora: the model has no adapters to merge")
	}
	ad, err := m.LoRAParams()
	if err != nil {
		return err
	}
	w, err := m.CopyParams()
	if err != nil {
		return err
	}
	r := st.cfg.Rank
	type job struct {
		a      adapter
		w      Tensor
		o0, o1 int // rows
	}
	var jobs []job
	for l, ads := range st.layers {
		lp := m.lo.layers[l]
		for _, a := range ads {
			wt := m.lo.tensors[lp.projection(a.module)]
			for o := 0; o < a.rows; o += 256 {
				jobs = append(jobs, job{a, wt, o, min(o+256, a.rows)})
			}
		}
	}
	// Blocks of rows on every core: each row's sums are its own, so the
	// result does not depend on how they are shared.
	var wg sync.WaitGroup
	next := make(chan job)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				a := j.a
				A, B := ad[st.tensors[a.a].Off:], ad[st.tensors[a.b].Off:]
				for o := j.o0; o < j.o1; o++ {
					if o >= a.padFrom && o < a.padFrom+a.padRows {
						continue
					}
					row := w[j.w.Off+o*a.in : j.w.Off+(o+1)*a.in]
					for i := range row {
						var s float64
						for k := range r {
							s += float64(B[o*r+k]) * float64(A[k*a.in+i])
						}
						row[i] += float32(float64(st.scale) * s)
					}
				}
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	m.be.Free(st.params)
	m.lora = nil
	m.resizeTrainState()
	return m.SetParams(w)
}

// loraScratch are a pass's buffers for the adapters' inner products: u =
// s x A^T (N, r) and its gradient, and one adapter's output (N, widest).
type loraScratch struct {
	u, du, y gpu.Buffer
	n        int // tokens they hold
}

// loraBuffers are p's adapter scratch for N tokens, regrown when short.
func (p *Pass) loraBuffers(N int) *loraScratch {
	m, c := p.m, p.m.Cfg
	s := &p.loraBuf
	if s.n >= N {
		return s
	}
	for _, b := range []gpu.Buffer{s.u, s.du, s.y} {
		if b != nil {
			m.be.Free(b)
		}
	}
	r := m.lora.cfg.Rank
	s.u, s.du, s.y, s.n = m.be.Alloc(N*r), m.be.Alloc(N*r), m.be.Alloc(N*c.loraWidest()), N
	return s
}

// loraForward adds module mod's adapter of layer l to y (N, rows), the
// projection of x (N, in), on p's scratch (loraApply).
func (p *Pass) loraForward(y, x gpu.Buffer, l int, mod loraModule, N int) {
	if p.m.lora == nil {
		return
	}
	s := p.loraBuffers(N)
	p.m.loraApply(p.be, y, x, s.u, s.y, l, mod, N)
}

// loraApply adds module mod's adapter of layer l to y (N, rows), the
// projection of x (N, in), on be: y += (s x A^T) B^T, through u (N, r)
// and out (N, rows) of scratch. Without an adapter there it does nothing.
func (m *Model) loraApply(be gpu.Backend, y, x, u, out gpu.Buffer, l int, mod loraModule, N int) {
	st := m.lora
	ad, ok := st.adapterAt(l, mod)
	if !ok {
		return
	}
	r := st.cfg.Rank
	A, B := tensorOf(st.params, st.tensors[ad.a]), tensorOf(st.params, st.tensors[ad.b])
	u, out = u.Slice(0, N*r), out.Slice(0, N*ad.rows)
	be.MatMulForward(u, x, A, nil, N, ad.in, r)
	be.Scale(u, N*r, st.scale)
	be.MatMulForward(out, u, B, nil, N, r, ad.rows)
	be.Add(y, y, out, N*ad.rows)
}

// loraRank is the attached adapters' rank (0: none).
func (m *Model) loraRank() int {
	if m.lora == nil {
		return 0
	}
	return m.lora.cfg.Rank
}

// loraWidest is the widest projection output an adapter writes: its
// scratch row.
func (c Config) loraWidest() int { return max(c.Heads*c.HeadSize(), c.Dim, 2*c.Hidden) }

// loraBackward differentiates loraForward: given dy (N, rows), it adds
// to dx (N, in) and to the adapter's gradients (u is computed again from
// x: an (N, in, r) product, cheaper than keeping it).
func (p *Pass) loraBackward(dx, dy, x gpu.Buffer, l int, mod loraModule, N int) {
	st := p.m.lora
	if st == nil {
		return
	}
	ad, ok := st.adapterAt(l, mod)
	if !ok {
		return
	}
	be, r := p.be, st.cfg.Rank
	s := p.loraBuffers(N)
	A, B := tensorOf(st.params, st.tensors[ad.a]), tensorOf(st.params, st.tensors[ad.b])
	dA, dB := tensorOf(p.grads, st.tensors[ad.a]), tensorOf(p.grads, st.tensors[ad.b])
	u, du := s.u.Slice(0, N*r), s.du.Slice(0, N*r)
	be.MatMulForward(u, x, A, nil, N, ad.in, r)
	be.Scale(u, N*r, st.scale)
	be.Zero(du)
	be.MatMulBackward(du, dB, nil, dy, u, B, N, r, ad.rows)
	be.Scale(du, N*r, st.scale)
	be.MatMulBackward(dx, dA, nil, du, x, A, N, ad.in, r)
	if ad.padRows > 0 { // the other half of gate|up is not this adapter's
		be.Zero(dB.Slice(ad.padFrom*r, ad.padRows*r))
	}
}

// tensorOf is t's view of buf.
func tensorOf(buf gpu.Buffer, t Tensor) gpu.Buffer { return buf.Slice(t.Off, t.Size()) }

// stepLoRA is Step over the adapters: clip their gradient, AdamW with
// decay on every adapter matrix (as PEFT's trainer decays them).
func (m *Model) stepLoRA(o Optim) (float64, error) {
	st, n := m.lora, m.lora.total
	g := m.grads.Slice(0, n)
	gradNorm := math.Sqrt(m.be.SumSquares(g, n))
	if math.IsNaN(gradNorm) || math.IsInf(gradNorm, 0) {
		return gradNorm, fmt.Errorf("optimizer step %d: %w (adapters' norm %v)", m.step+1, ErrNonFinite, gradNorm)
	}
	scale := float32(1)
	if o.MaxGradNorm > 0 && gradNorm > float64(o.MaxGradNorm) {
		scale = float32(float64(o.MaxGradNorm) / gradNorm)
	}
	m.step++
	h := gpu.AdamWParams{LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, Step: m.step, GradScale: scale, WeightDecay: o.WeightDecay}
	m.be.AdamW(st.params, g, m.m.Slice(0, n), m.v.Slice(0, n), n, h)
	if ss := m.be.SumSquares(st.params, n); math.IsNaN(ss) || math.IsInf(ss, 0) {
		for _, t := range st.tensors {
			if ts := m.be.SumSquares(tensorOf(st.params, t), t.Size()); math.IsNaN(ts) || math.IsInf(ts, 0) {
				return gradNorm, fmt.Errorf("optimizer step %d: %w: adapter %s after the update", m.step, ErrNonFinite, t.Name)
			}
		}
	}
	return gradNorm, m.be.Sync()
}
