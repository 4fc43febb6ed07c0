package model

import "github.com/corl-project/corl/spec"

// OptimFromSpec is the run spec's optimizer settings as AdamW's.
func OptimFromSpec(o spec.Optim) Optim {
	return Optim{LR: float32(o.LearningRate), Beta1: o.AdamBeta1, Beta2: o.AdamBeta2, Eps: o.AdamEpsilon,
		WeightDecay: o.WeightDecay, MaxGradNorm: o.MaxGradNorm}
}
