package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/corl-project/corl/checker"
	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/rl"
	"github.com/corl-project/corl/spec"
)

// Validate checks every field of s and returns one error listing each bad
// key with what is allowed (nil when all are good).
func Validate(s *RunSpec) error {
	var errs []error
	bad := func(err error) { errs = append(errs, err) }
	for _, check := range []func(*RunSpec, func(error)){validateSizesAndData, validateRun, validateReward, validateMembers} {
		check(s, bad)
	}
	return errors.Join(errs...)
}

// validateSizesAndData: the counts that must be positive, the data, its checker.
func validateSizesAndData(s *RunSpec, bad func(error)) {
	positive := []struct {
		key string
		v   int
	}{{"rounds", s.Rounds}, {"prompts_per_round", s.PromptsPerRound}, {"generation.num_generations", s.Generation.NumGenerations},
		{"generation.max_completion_length", s.Generation.MaxCompletion}, {"micro_batch_size", s.MicroBatchSize}, {"eval.size", s.Eval.Size}}
	for _, p := range positive {
		if p.v <= 0 {
			bad(fmt.Errorf("%s: must be positive, got %d", p.key, p.v))
		}
	}
	if t := s.Data.AnswerType; t != "" && !slices.Contains(datasets.AnswerTypes, t) {
		bad(fmt.Errorf("data.answer_type: %q is not one of %s", t, strings.Join(datasets.AnswerTypes, ", ")))
	}
	if f := s.Data.FileSplit; f != "" && f != "hash" && f != "none" {
		bad(fmt.Errorf("data.file_split: %q is not one of hash, none", f))
	}
	if c := checker.FromSpec(s.Data.Checker); c != nil {
		if err := c.Validate(); err != nil {
			bad(fmt.Errorf("data.%w", err))
		}
		if s.Data.Checker.TimeoutSeconds < 0 || math.IsNaN(s.Data.Checker.TimeoutSeconds) {
			bad(fmt.Errorf("data.checker.timeout_seconds: %v must not be negative", s.Data.Checker.TimeoutSeconds))
		}
		if s.Reward.Mode == rl.PeerJudge {
			bad(fmt.Errorf("data.checker: reward.mode peer-judge scores answers by a peer's likelihood of them, not by keys; use another mode with a checker"))
		}
	} else if ch := s.Data.Checker; ch.TimeoutSeconds != 0 || ch.MemoryMB != 0 || ch.Processes != 0 {
		bad(fmt.Errorf("data.checker.command: the program to run is required when data.checker sets limits"))
	}
	if s.Data.AnswerType != "" && s.Data.File == "" {
		bad(fmt.Errorf("data.answer_type: applies to data.file; the built-in tasks' answers are numbers"))
	}
	if g := s.GRPO.StepsPerGeneration; g < 0 || (s.PromptsPerRound > 0 && g > s.PromptsPerRound) {
		bad(fmt.Errorf("grpo.steps_per_generation: %d must be in [1, prompts_per_round %d]", g, s.PromptsPerRound))
	}
}

// validateRun: the budget, the evaluation, generation and the optimiser.
func validateRun(s *RunSpec, bad func(error)) {
	if s.MaxFLOPs < 0 || math.IsNaN(s.MaxFLOPs) || math.IsInf(s.MaxFLOPs, 0) {
		bad(fmt.Errorf("max_flops: %v must be a finite number, 0 for no limit", s.MaxFLOPs))
	}
	if s.Eval.Split != "test" && s.Eval.Split != "validation" {
		bad(fmt.Errorf("eval.split: %q is not one of test, validation", s.Eval.Split))
	}
	switch {
	case s.Eval.PredictorSplit != "" && s.Eval.PredictorSplit != "validation":
		bad(fmt.Errorf("eval.predictor_split: %q is not validation (or empty)", s.Eval.PredictorSplit))
	case s.Eval.PredictorSplit != "" && s.Eval.Split == "validation":
		bad(fmt.Errorf("eval.predictor_split: validation is already the evaluation split (eval.split); leave it empty"))
	}
	if s.Eval.Samples < 0 || s.Eval.Samples > 64 {
		bad(fmt.Errorf("eval.samples: %d must be in [0, 64]", s.Eval.Samples))
	}
	if s.Eval.Temperature < 0 {
		bad(fmt.Errorf("eval.temperature: %v must not be negative", s.Eval.Temperature))
	}
	if s.LogitRows < 0 {
		bad(fmt.Errorf("logit_rows: %d must be 0 (every token's logits) or positive", s.LogitRows))
	}
	switch s.UpdatePrecision {
	case "", "fp32", "bf16":
	default:
		bad(fmt.Errorf("update_precision: %q: want fp32 or bf16", s.UpdatePrecision))
	}
	if s.Generation.NumGenerations == 1 {
		bad(fmt.Errorf("generation.num_generations: 1 gives every group zero variance (no advantage, nothing learned); use at least 2"))
	}
	if err := validateOptim(s.Optim); err != nil {
		bad(err)
	}
	switch t := s.Generation.Temperature; {
	case t < 0 || math.IsNaN(float64(t)):
		bad(fmt.Errorf("generation.temperature: %v must be positive", t))
	case t == 0:
		bad(fmt.Errorf("generation.temperature: 0 samples greedily, so a prompt's %d samples are one and the same (zero variance, nothing learned); use a positive temperature (default 1)", s.Generation.NumGenerations))
	}
	if s.Generation.TopK < 0 {
		bad(fmt.Errorf("generation.top_k: %d must be 0 (no limit) or positive", s.Generation.TopK))
	}
	for _, e := range []struct {
		key string
		v   int
	}{{"eval.every", s.Eval.Every}, {"checkpoint.every", s.Checkpoint.Every}} {
		if e.v < 0 {
			bad(fmt.Errorf("%s: %d must be 0 (at the end only) or positive", e.key, e.v))
		}
	}
	if _, err := model.ParseKVType(s.Generation.KVCache); err != nil {
		bad(fmt.Errorf("generation.kv_cache: %w", err))
	}
	if _, err := model.ParseWeightType(s.Generation.Weights); err != nil {
		bad(fmt.Errorf("generation.weights: %w", err))
	}
	if p := s.Generation.TopP; !(p > 0 && p <= 1) {
		bad(fmt.Errorf("generation.top_p: %v must be in (0, 1]: 0 keeps no token (1, the default, keeps all)", p))
	}
}

// validateReward: the reward, the update and the built-in tasks.
func validateReward(s *RunSpec, bad func(error)) {
	if s.Reward.Threshold < 0 || s.Reward.Threshold > 1 {
		bad(fmt.Errorf("reward.self_consistency_threshold: %v must be in [0, 1]", s.Reward.Threshold))
	}
	known := false
	for _, n := range rl.StrategyNames {
		known = known || n == s.Reward.Mode
	}
	if !known {
		bad(fmt.Errorf("reward.mode: %q is not one of %s", s.Reward.Mode, strings.Join(rl.StrategyNames, ", ")))
	}
	if err := rl.GRPOFromSpec(s.GRPO).Validate(); err != nil {
		bad(fmt.Errorf("grpo.%w", err))
	}
	if s.Optim.MinLRRatio < 0 || s.Optim.MinLRRatio > 1 {
		bad(fmt.Errorf("optim.min_lr_ratio: %v must be in [0, 1]", s.Optim.MinLRRatio))
	}
	if s.Data.File == "" {
		if len(s.Data.Tasks) == 0 {
			bad(fmt.Errorf("data.tasks: name at least one task (or set data.file)"))
		}
		for _, t := range s.Data.Tasks {
			if _, err := datasets.LookupTask(t); err != nil {
				bad(fmt.Errorf("data.tasks: %w", err))
			}
		}
		if s.Data.RLSize < s.PromptsPerRound {
			bad(fmt.Errorf("data.rl_size: %d is smaller than prompts_per_round %d", s.Data.RLSize, s.PromptsPerRound))
		}
	}
}

// validateMembers: the cohort.
func validateMembers(s *RunSpec, bad func(error)) {
	if len(s.Members) == 0 {
		bad(fmt.Errorf("members: the cohort is empty"))
	}
	needPeers := s.Reward.Mode == rl.PeerRing || s.Reward.Mode == rl.PeerMajority || s.Reward.Mode == rl.PeerJudge
	if needPeers && len(s.Members) < 2 {
		bad(fmt.Errorf("members: reward.mode %s needs at least 2 members, have %d", s.Reward.Mode, len(s.Members)))
	}
	frozen := 0
	for _, m := range s.Members {
		if m.Frozen {
			frozen++
		}
	}
	if frozen > 0 && frozen == len(s.Members) {
		bad(fmt.Errorf("members: every member is frozen, so nothing would train; freeze only the peer whose labels are the control"))
	}
	seen := map[string]bool{}
	for i, m := range s.Members {
		switch {
		case m.Name == "":
			bad(fmt.Errorf("members[%d].name: empty", i))
		case strings.ContainsAny(m.Name, "/\\ "):
			bad(fmt.Errorf("members[%d].name: %q may not contain slashes or spaces", i, m.Name))
		case seen[m.Name]:
			bad(fmt.Errorf("members[%d].name: %q is used twice", i, m.Name))
		case m.Base == "":
			bad(fmt.Errorf("members[%d].base: empty", i))
		case s.Data.File != "" && m.View != 0:
			bad(fmt.Errorf("members[%d].view: %d is not a view of the data; data.file has only view 0", i, m.View))
		case m.View < 0 || m.View > 1:
			bad(fmt.Errorf("members[%d].view: %d is not a view of the data; built-in tasks have views 0 (original) and 1 (rephrased)", i, m.View))
		case m.LoRA != nil && m.Frozen:
			bad(fmt.Errorf("members[%d].lora: member %s is frozen, so its adapters would never train; drop lora or frozen", i, m.Name))
		case m.LoRA != nil:
			if err := model.LoRAOf(*m.LoRA).Validate(); err != nil {
				bad(fmt.Errorf("members[%d].%w", i, err))
			}
		}
		seen[m.Name] = true
	}
}

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
