package config

import (
	"fmt"

	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/spec"
)

func modelOptim(o spec.Optim) model.Optim {
	return model.Optim{LR: float32(o.LearningRate), Beta1: o.AdamBeta1, Beta2: o.AdamBeta2, Eps: o.AdamEpsilon,
		WeightDecay: o.WeightDecay, MaxGradNorm: o.MaxGradNorm}
}

// validateOptim refuses optimizer settings that cannot train: a learning
// rate outside (0, 1], betas outside their ranges, a zero epsilon (0/0 in
// AdamW's first step: NaN weights), negative decay or clipping.
func validateOptim(o spec.Optim) error {
	switch {
	case !(o.LearningRate > 0 && o.LearningRate <= 1):
		return fmt.Errorf("optim.learning_rate: %v must be in (0, 1]", o.LearningRate)
	case !(o.AdamBeta1 >= 0 && o.AdamBeta1 < 1):
		return fmt.Errorf("optim.adam_beta1: %v must be in [0, 1)", o.AdamBeta1)
	case !(o.AdamBeta2 > 0 && o.AdamBeta2 < 1):
		return fmt.Errorf("optim.adam_beta2: %v must be in (0, 1)", o.AdamBeta2)
	case !(o.AdamEpsilon > 0):
		return fmt.Errorf("optim.adam_epsilon: %v must be positive", o.AdamEpsilon)
	case !(o.WeightDecay >= 0):
		return fmt.Errorf("optim.weight_decay: %v must not be negative", o.WeightDecay)
	case !(o.MaxGradNorm >= 0):
		return fmt.Errorf("optim.max_grad_norm: %v must not be negative", o.MaxGradNorm)
	}
	return nil
}
