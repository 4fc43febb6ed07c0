package rl

import (
	"github.com/corl-project/corl/checker"
	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/spec"
)

// GRPOFromSpec is the spec's update settings as the update's.
func GRPOFromSpec(g spec.GRPO) GRPO {
	return GRPO{ScaleRewards: g.ScaleRewards, LossType: g.LossType, Epsilon: g.Epsilon, EpsilonHigh: g.EpsilonHigh,
		Beta: g.Beta, NumIterations: g.NumIterations, StepsPerGeneration: g.StepsPerGeneration}
}

// ConfigFromSpec is the round's algorithm settings for a run spec.
func ConfigFromSpec(s *spec.RunSpec) Config {
	g := GRPOFromSpec(s.GRPO)
	g.MaxNewTokens = s.Generation.MaxCompletion
	return Config{
		Reward: s.Reward.Mode, Threshold: s.Reward.Threshold,
		NumGenerations: s.Generation.NumGenerations, Temperature: s.Generation.Temperature, TopK: s.Generation.TopK,
		TopP: s.Generation.TopP, MaxNewTokens: s.Generation.MaxCompletion, KV: model.KVType(s.Generation.KVCache),
		Weights: model.WeightType(s.Generation.Weights), GRPO: g,
		LearningRate: s.Optim.LearningRate, WarmupSteps: s.Warmup(), TotalSteps: s.Rounds * s.GRPO.StepsPerRound(),
		MinLRRatio: s.Optim.MinLRRatio, MicroBatch: s.MicroBatchSize, Recompute: s.Recompute, LogitRows: s.LogitRows, BF16Matmuls: s.UpdatePrecision == "bf16", Seed: s.Seed,
		Optim: model.OptimFromSpec(s.Optim), Answers: datasets.AnswerRuleFromSpec(s.Data), Checker: checker.FromSpec(s.Data.Checker),
	}
}
