package model

import (
	"fmt"

	"github.com/corl-project/corl/gpu"
)

// Model is one transformer on one backend: parameters, gradients, AdamW state
// and the activations of the last forward pass. It is not safe for concurrent use.
type Model struct {
	Cfg Config
	be  gpu.Backend
	lo  *layout

	params, grads, m, v gpu.Buffer
	step                int // optimizer steps taken

	own     Pass    // ForwardAt and Backward: the model's backend, into grads
	scratch Pass    // Accumulate's pass on the model's backend, into its own gradient
	parts   []*Pass // Accumulate's passes on one-thread parts (gpu.Splitter)
	// spare is the last KV cache freed, kept for the next of its shape.
	spare *Cache
	// invFreq are the rotary frequencies under rope_scaling (nil: none).
	invFreq []float32
	// Warnings are what LoadHF found suspicious but not fatal (weights of
	// absurd magnitude in a directory without checksums); callers show them.
	Warnings []string
	// Recompute keeps, of a training pass's layers, only the residual
	// stream entering each: the backward runs each layer's forward again
	// from it before differentiating the layer, so a pass holds one
	// layer's activations instead of every layer's, for about a third more
	// compute. The gradients are the same bits either way (every operation
	// is deterministic, and the recomputed values are the stored ones).
	Recompute bool
	// LogitRows, when positive, computes a training pass's logits that
	// many rows (tokens) at a time: the forward keeps each token's
	// log-probability and the backward computes each block's logits again,
	// so the pass holds LogitRows x vocabulary logits, not one row a token
	// (a 151,936-token vocabulary: 0.6 MB a token). The log-probabilities
	// and the gradients but the output head's are the same bits; the head's
	// sums over tokens add block by block.
	LogitRows int
	// BF16Matmuls runs the matmuls of Accumulate's, Forwards' and
	// TrainStep's passes (the update and its log-probs) on bfloat16 operands with float32
	// sums, forward and backward, where the backend has them
	// (gpu.BF16Compute): mixed-precision training, the weights, gradients
	// and AdamW state float32 as before, the matmuls a GPU's tensor cores'.
	// Each pass's weights are rounded once, when the passes start; the
	// adapters of LoRA stay float32. On a backend without bfloat16
	// matmuls it changes nothing.
	BF16Matmuls bool
	// Generation is the checkpoint's generation_config.json (LoadHF; zero
	// for a new model).
	Generation Generation
	// lora are the attached adapters (nil: none; AttachLoRA).
	lora *loraState
	// src is the checkpoint LoadHF read, whose layout SaveHF writes back
	// (nil: a new model, saved as float32 in one file).
	src *hfSource
}

// New builds a model with freshly initialised weights (deterministic from seed).
func New(be gpu.Backend, cfg Config, seed uint64) (*Model, error) {
	m, err := alloc(be, cfg)
	if err != nil {
		return nil, err
	}
	be.Upload(m.params, initParams(m.Cfg, m.lo, seed))
	return m, nil
}

// alloc builds a model with its buffers allocated and the weights left as
// the backend gives them.
func alloc(be gpu.Backend, cfg Config) (*Model, error) {
	c, err := cfg.Normalized()
	if err != nil {
		return nil, fmt.Errorf("model config: %w", err)
	}
	lo := newLayout(c)
	inv := c.ropeFrequencies()
	if _, ok := be.(gpu.ScaledRoPE); inv != nil && !ok {
		return nil, fmt.Errorf("model config: rope_scaling %s needs a backend with scaled rotary embeddings; %s has none (use --backend cpu)", c.RopeScaling.Type, be.Name())
	}
	m := &Model{Cfg: c, be: be, lo: lo, invFreq: inv,
		params: be.Alloc(lo.total), grads: be.Alloc(lo.total), m: be.Alloc(lo.total), v: be.Alloc(lo.total)}
	m.own = Pass{m: m, be: be, grads: m.grads}
	m.scratch = Pass{m: m, be: be}
	return m, nil
}

// ropeOn rotates x (N, H, HS) by position, forward or back, with the
// model's frequencies, on be (the model's backend or one of its parts).
func (m *Model) ropeOn(be gpu.Backend, x gpu.Buffer, pos []int32, N, H int, forward bool) {
	HS, theta := m.Cfg.HeadSize(), m.Cfg.RopeTheta
	switch s, scaled := be.(gpu.ScaledRoPE); {
	case m.invFreq != nil && scaled && forward:
		s.RoPEForwardFreq(x, pos, N, H, HS, m.invFreq)
	case m.invFreq != nil && scaled:
		s.RoPEBackwardFreq(x, pos, N, H, HS, m.invFreq)
	case forward:
		be.RoPEForward(x, pos, N, H, HS, theta)
	default:
		be.RoPEBackward(x, pos, N, H, HS, theta)
	}
}

// Backend returns the device the model lives on.
func (m *Model) Backend() gpu.Backend { return m.be }

// Tensors lists the parameters in buffer order.
func (m *Model) Tensors() []Tensor { return m.lo.tensors }

// NumParams is the number of parameters (tied embeddings counted once).
func (m *Model) NumParams() int { return m.lo.total }

// Params is the parameter buffer (all tensors, see Tensors for the layout).
func (m *Model) Params() gpu.Buffer { return m.params }

// CopyParams returns the weights as they are now, on the host.
func (m *Model) CopyParams() ([]float32, error) {
	host := make([]float32, m.lo.total)
	m.be.Download(host, m.params)
	return host, m.be.Sync()
}

// SetParams puts back weights CopyParams returned.
func (m *Model) SetParams(host []float32) error {
	if len(host) != m.lo.total {
		return fmt.Errorf("set params: %d values for a model of %d", len(host), m.lo.total)
	}
	m.be.Upload(m.params, host)
	return m.be.Sync()
}

// FLOPsPerToken estimates the floating-point operations of one training token
// (forward and backward) at sequence length T: 6 per weight of every matmul the
// token passes through (the LM head included; embedding lookups excluded) plus
// attention's score and value products, 6 * 2 * layers * dim * T/2 (a causal
// query sees T/2 keys on average). With LoRA adapters, 4 per frozen weight
// (no weight gradient) and 8 per adapter value.
func (m *Model) FLOPsPerToken(T int) float64 {
	c := m.Cfg
	dense := float64(m.lo.total - m.lo.tensors[m.lo.wte].Size())
	if m.lo.wpe >= 0 {
		dense -= float64(m.lo.tensors[m.lo.wpe].Size())
	}
	if m.lo.lmHead == m.lo.wte { // a tied head is a matmul too
		dense += float64(m.lo.tensors[m.lo.wte].Size())
	}
	attn := 12 * float64(c.Layers) * float64(c.Dim) * float64(T) / 2
	if m.lora != nil {
		// Frozen weights: forward and the input's gradient, 4 per weight;
		// the adapters (a tiny share): 6 each, and A's product once more
		// in the backward, counted as 2 more for every adapter value.
		return 4*dense + 8*float64(m.lora.total) + attn
	}
	return 6*dense + attn
}

// ForwardFLOPs is one forward pass over a sequence of T tokens, or its
// cached decoding one position at a time (a third of FLOPsPerToken's forward
// and backward, T times).
func (m *Model) ForwardFLOPs(T int) float64 { return m.FLOPsPerToken(T) / 3 * float64(T) }

func (m *Model) view(buf gpu.Buffer, i int) gpu.Buffer {
	if i < 0 {
		return nil
	}
	t := m.lo.tensors[i]
	return buf.Slice(t.Off, t.Size())
}

// Tensor returns the parameter view of the named tensor, or an error.
func (m *Model) Tensor(name string) (gpu.Buffer, Tensor, error) {
	for i, t := range m.lo.tensors {
		if t.Name == name {
			return m.view(m.params, i), t, nil
		}
	}
	return nil, Tensor{}, fmt.Errorf("model has no tensor %q", name)
}
