package config

import (
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/spec"
)

func modelOptim(o spec.Optim) model.Optim {
	return model.Optim{LR: float32(o.LearningRate), Beta1: o.AdamBeta1, Beta2: o.AdamBeta2, Eps: o.AdamEpsilon,
		WeightDecay: o.WeightDecay, MaxGradNorm: o.MaxGradNorm}
}
