package config

import (
	"errors"
	"fmt"

	"github.com/corl-project/corl/spec"
)

// validateOptim refuses optimizer settings that cannot train: a learning
// rate outside (0, 1], betas outside their ranges, a zero epsilon (0/0 in
// AdamW's first step: NaN weights), negative decay or clipping.
func validateOptim(o spec.Optim) error {
	var errs []error
	check := func(ok bool, format string, v any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, v))
		}
	}
	check(o.LearningRate > 0 && o.LearningRate <= 1, "optim.learning_rate: %v must be in (0, 1]", o.LearningRate)
	check(o.AdamBeta1 >= 0 && o.AdamBeta1 < 1, "optim.adam_beta1: %v must be in [0, 1)", o.AdamBeta1)
	check(o.AdamBeta2 > 0 && o.AdamBeta2 < 1, "optim.adam_beta2: %v must be in (0, 1)", o.AdamBeta2)
	check(o.WarmupRatio >= 0 && o.WarmupRatio < 1, "optim.warmup_ratio: %v must be in [0, 1)", o.WarmupRatio)
	check(o.AdamEpsilon > 0, "optim.adam_epsilon: %v must be positive", o.AdamEpsilon)
	check(o.WeightDecay >= 0, "optim.weight_decay: %v must not be negative", o.WeightDecay)
	check(o.MaxGradNorm >= 0, "optim.max_grad_norm: %v must not be negative", o.MaxGradNorm)
	return errors.Join(errs...)
}
