package model

import (
	"fmt"
	"math"

	"github.com/corl-project/corl/gpu"
)

// Optim holds AdamW and clipping settings for one Step.
type Optim struct {
	LR          float32 `json:"learning_rate"`
	Beta1       float32 `json:"adam_beta1"`
	Beta2       float32 `json:"adam_beta2"`
	Eps         float32 `json:"adam_epsilon"`
	WeightDecay float32 `json:"weight_decay"`
	MaxGradNorm float32 `json:"max_grad_norm"` // 0: no clipping
}

// DefaultOptim is AdamW(0.9, 0.95, 1e-8), weight decay 0.1, clip at 1.
func DefaultOptim(lr float32) Optim {
	return Optim{LR: lr, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, MaxGradNorm: 1}
}

// ZeroGrad clears the gradients.
func (m *Model) ZeroGrad() { m.be.Zero(m.grads) }

// ErrNonFinite is wrapped by Step when the gradient norm is NaN or Inf; the
// weights are left untouched.
var ErrNonFinite = fmt.Errorf("non-finite gradient")

// Step clips the accumulated gradients to MaxGradNorm (global L2 norm) and
// applies AdamW; decay applies to matrices only. It returns the norm before
// clipping.
func (m *Model) Step(o Optim) (gradNorm float64, err error) {
	if m.lora != nil {
		return m.stepLoRA(o)
	}
	gradNorm = math.Sqrt(m.be.SumSquares(m.grads, m.lo.total))
	if math.IsNaN(gradNorm) || math.IsInf(gradNorm, 0) {
		return gradNorm, fmt.Errorf("optimizer step %d: %w (norm %v)", m.step+1, ErrNonFinite, gradNorm)
	}
	scale := float32(1)
	if o.MaxGradNorm > 0 && gradNorm > float64(o.MaxGradNorm) {
		scale = float32(float64(o.MaxGradNorm) / gradNorm)
	}
	m.step++
	h := gpu.AdamWParams{LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, Step: m.step, GradScale: scale}
	d := m.lo.decayed
	h.WeightDecay = o.WeightDecay
	m.be.AdamW(m.params.Slice(0, d), m.grads.Slice(0, d), m.m.Slice(0, d), m.v.Slice(0, d), d, h)
	h.WeightDecay = 0
	n := m.lo.total - d
	m.be.AdamW(m.params.Slice(d, n), m.grads.Slice(d, n), m.m.Slice(d, n), m.v.Slice(d, n), n, h)
	// A finite gradient can still give non-finite weights (a zero epsilon's
	// 0/0, an overflowing step): name the first such tensor.
	if ss := m.be.SumSquares(m.params, m.lo.total); math.IsNaN(ss) || math.IsInf(ss, 0) {
		for _, t := range m.lo.tensors {
			if ts := m.be.SumSquares(m.params.Slice(t.Off, t.Size()), t.Size()); math.IsNaN(ts) || math.IsInf(ts, 0) {
				return gradNorm, fmt.Errorf("optimizer step %d: %w: tensor %s after the update", m.step, ErrNonFinite, t.Name)
			}
		}
		return gradNorm, fmt.Errorf("optimizer step %d: %w: weights after the update", m.step, ErrNonFinite)
	}
	return gradNorm, m.be.Sync()
}

// Batch is a (B, T) block of next-token examples with a weight per position.
type Batch struct {
	B, T    int
	Inputs  []int32   // (B*T)
	Targets []int32   // (B*T)
	Weights []float32 // (B*T); nil means all ones
	// Temperature divides the logits (0 means 1): the loss of a policy
	// sampled at that temperature.
	Temperature float32
}

// Loss runs forward and returns the weighted mean negative log-likelihood
// -sum(w*logp)/sum(w) together with the per-token log-probabilities.
func (m *Model) Loss(b Batch) (loss float64, logp []float32, err error) {
	temp := b.Temperature
	if temp == 0 {
		temp = 1
	}
	logp, _, err = m.ForwardAt(b.Inputs, b.Targets, b.B, b.T, temp, false)
	if err != nil {
		return 0, nil, err
	}
	var sw, s float64
	for i, lp := range logp {
		w := 1.0
		if b.Weights != nil {
			w = float64(b.Weights[i])
		}
		sw += w
		s -= w * float64(lp)
	}
	if sw == 0 {
		return 0, logp, fmt.Errorf("loss: every token weight is zero")
	}
	return s / sw, logp, nil
}

// TrainStep runs forward, the weighted cross-entropy loss, backward and one
// optimizer step; it returns the loss before the step. With BF16Matmuls
// the forward and backward run their matmuls in bfloat16 (the weights
// rounded once, released before the step writes them).
func (m *Model) TrainStep(b Batch, o Optim) (loss float64, err error) {
	release, ok := m.freezeBF16()
	if !ok {
		release = func() {}
	}
	defer func() { release() }()
	loss, _, err = m.Loss(b)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, fmt.Errorf("train step %d: %w loss %v", m.step+1, ErrNonFinite, loss)
	}
	var sw float64
	for i := range b.Inputs {
		if b.Weights == nil {
			sw++
		} else {
			sw += float64(b.Weights[i])
		}
	}
	dlogp := make([]float32, len(b.Inputs))
	for i := range dlogp {
		w := float32(1)
		if b.Weights != nil {
			w = b.Weights[i]
		}
		dlogp[i] = -w / float32(sw)
	}
	m.ZeroGrad()
	if err := m.Backward(dlogp); err != nil {
		return loss, err
	}
	release()
	release = func() {}
	if _, err := m.Step(o); err != nil {
		return loss, err
	}
	return loss, nil
}
