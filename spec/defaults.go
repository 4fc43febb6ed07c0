package spec

import "encoding/json"

// Default is a run spec with every setting at its embedded default and no
// members: the paper's choices where it made them (G = 8, temperature 1,
// ring rewards, no KL, group-scaled rewards). The config package layers a
// file, the environment and flags over it; a spec that arrives as JSON
// (`temporal workflow start --input-file`) is decoded over it, so a key it
// omits means the same in both.
func Default() RunSpec {
	return RunSpec{
		Name: "corl-run", Seed: 1, Rounds: 10, PromptsPerRound: 16,
		Data:       Data{Tasks: []string{"arith"}, DataSeed: 1, RLSize: 400},
		Reward:     Reward{Mode: "peer-ring"},
		Generation: Generation{NumGenerations: 8, Temperature: 1, TopP: 1, MaxCompletion: 64},
		GRPO:       GRPO{ScaleRewards: "group", LossType: "token-mean", Epsilon: 0.2, NumIterations: 1, StepsPerGeneration: 1},
		Optim: Optim{LearningRate: 1e-4, WarmupRatio: 0.05, MinLRRatio: 0.1, AdamBeta1: 0.9, AdamBeta2: 0.999, AdamEpsilon: 1e-8,
			MaxGradNorm: 1},
		MicroBatchSize: 32, Members: []Member{},
		Eval:       Eval{Size: 100, Split: "test"},
		Checkpoint: Checkpoint{Every: 5},
		OutputDir:  "runs",
	}
}

// UnmarshalJSON decodes a spec over Default(): omitted keys keep their
// defaults instead of becoming zero (a zero micro_batch_size, epsilon or
// learning rate cannot run).
func (s *RunSpec) UnmarshalJSON(b []byte) error {
	type plain RunSpec // without this method
	p := plain(Default())
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = RunSpec(p)
	return nil
}
