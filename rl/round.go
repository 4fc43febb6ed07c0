package rl

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/corl-project/corl/checker"
	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/tokenizer"
)

// Member is one model of the cohort.
type Member struct {
	Name  string
	Model *model.Model
	Ref   *model.Model // frozen reference for the KL term; nil when beta == 0
	Tok   tokenizer.Tokenizer
	View  int // surface form of each prompt this member sees (0: original, 1: rephrased)
	// Frozen members are never updated (the frozen-peer control): Update
	// leaves their weights and optimizer as they are.
	Frozen bool
}

// Prompt is one RL prompt in every surface form. Truth is the normalised
// answer for diagnostics (empty when unknown); it reaches a reward only
// through the ground-truth strategy.
type Prompt struct {
	ID    string
	Views []string
	Truth string
	// Label is the answer as the data gives it (not normalised), what a
	// task's checker is shown.
	Label string
}

// PromptsFrom converts problems into prompts with their truth.
func PromptsFrom(ps []datasets.Problem) []Prompt {
	out := make([]Prompt, len(ps))
	for i, p := range ps {
		out[i] = Prompt{ID: p.ID, Views: p.Views(), Truth: datasets.Normalize(p.Answer), Label: p.Answer}
		if len(out[i].Views) == 0 {
			out[i].Views = []string{p.Prompt}
		}
	}
	return out
}

func (p Prompt) view(v int) string { return p.Views[v%len(p.Views)] }

// Config is the round's algorithm settings (names after TRL where they exist).
type Config struct {
	Reward         string  `json:"reward"`
	Threshold      float64 `json:"self_consistency_threshold"`
	NumGenerations int     `json:"num_generations"`
	Temperature    float32 `json:"temperature"`
	TopK           int     `json:"top_k"`
	TopP           float32 `json:"top_p"`
	MaxNewTokens   int     `json:"max_new_tokens"`
	// KV is the rollouts' key/value cache type ("": float32).
	KV model.KVType `json:"kv_cache,omitempty"`
	// Weights is what the rollouts' matmuls read ("": float32).
	Weights      model.WeightType `json:"weights,omitempty"`
	GRPO         GRPO             `json:"grpo"`
	LearningRate float64          `json:"learning_rate"`
	WarmupSteps  int              `json:"warmup_steps"`
	TotalSteps   int              `json:"total_steps"` // optimizer steps of the whole run, for the cosine schedule
	MinLRRatio   float64          `json:"min_lr_ratio"`
	Optim        model.Optim
	MicroBatch   int `json:"micro_batch"` // most sequences per forward/backward (microBatches)
	// Recompute is model.Model's Recompute for the update's passes.
	Recompute bool `json:"recompute,omitempty"`
	// LogitRows is model.Model's LogitRows for the update's passes.
	LogitRows int `json:"logit_rows,omitempty"`
	// BF16Matmuls is model.Model's BF16Matmuls for the update's passes
	// (the spec's update_precision: bf16).
	BF16Matmuls bool   `json:"bf16_matmuls,omitempty"`
	Seed        uint64 `json:"seed"`
	// Answers is what counts as a final answer (corl's tasks: numbers only).
	Answers datasets.AnswerRule `json:"answers"`
	// Checker, when set, keys the answers instead of Answers (see Check).
	Checker *checker.Spec `json:"checker,omitempty"`
}

// passTokens bounds a pass's padded positions (sequences x longest):
// 512 gave the fastest update of examples/local.yaml among 384-1024 and
// no bound, on 2 threads.
const passTokens = 512

// Round runs generate -> grade -> aggregate -> update for a cohort held in
// memory. steps is the optimizer steps each member has taken before the
// round. truth-bearing prompts feed the diagnostics and, for the
// ground-truth strategy only, the reward.
func Round(members []*Member, prompts []Prompt, c Config, round, steps int, progress func(stage string)) (*record.Round, error) {
	start := time.Now()
	note := func(s string) {
		if progress != nil {
			progress(s)
		}
	}
	met := &record.Round{Round: round, Reward: c.Reward, Models: make([]record.ModelRound, len(members))}
	rollouts := make([]Rollout, len(members))
	groups := make([][]Group, len(members))
	for i, m := range members {
		note("generate " + m.Name)
		t0 := time.Now()
		ro, err := Generate(m, i, prompts, c, round)
		if err != nil {
			return nil, err
		}
		rollouts[i], groups[i] = ro, ro.Groups()
		mr := &met.Models[i]
		mr.Name, mr.GenSeconds = m.Name, time.Since(t0).Seconds()
		met.Stages.Generate += mr.GenSeconds
		mr.GenTokens, mr.GenFLOPs = ro.Cost(m.Model)
	}
	t0 := time.Now()
	if c.Checker != nil {
		note("check")
		prompts = slices.Clone(prompts) // Check re-keys their truth
		views := make([]int, len(members))
		for i, m := range members {
			views[i] = m.View
		}
		run := func(ctx context.Context, items []checker.Item) ([]checker.Verdict, error) {
			return checker.Run(ctx, *c.Checker, items)
		}
		if err := Check(context.Background(), run, prompts, views, rollouts, groups, c.Reward == GroundTruthRL); err != nil {
			return nil, fmt.Errorf("round %d: %w", round, err)
		}
	}
	met.Stages.Grade = time.Since(t0).Seconds()
	t0 = time.Now()
	if err := intrinsicSignals(members, prompts, rollouts, groups, c, met, note); err != nil {
		return nil, err
	}
	met.Stages.Intrinsic = time.Since(t0).Seconds()
	note("grade")
	t0 = time.Now()
	graded, err := Grade(c, prompts, groups)
	if err != nil {
		return nil, err
	}
	met.Diag = graded.Diag
	met.Stages.Grade += time.Since(t0).Seconds()
	for i, m := range members {
		note("update " + m.Name)
		t0 := time.Now()
		us, err := Update(m, rollouts[i], graded.Advantages[i], c, steps)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", round, err)
		}
		mr := &met.Models[i]
		us.Record(mr)
		mr.UpdateSeconds = time.Since(t0).Seconds()
		met.Stages.Recompute += us.RecomputeSeconds
		met.Stages.Update += mr.UpdateSeconds - us.RecomputeSeconds
		mr.UpdateFLOPs = UpdateFLOPs(m.Model, c, us.Tokens)
	}
	met.Seconds = time.Since(start).Seconds()
	return met, nil
}

// TruthOf returns the prompts' normalised answers, or nil unless every
// prompt has one (diagnostics need all or nothing).
func TruthOf(prompts []Prompt) []string {
	var truth []string
	for _, p := range prompts {
		if p.Truth == "" {
			return nil
		}
		truth = append(truth, p.Truth)
	}
	return truth
}

// StrategyFor builds the configured reward; only ground truth sees the labels.
func StrategyFor(c Config, prompts []Prompt) (Strategy, error) {
	if c.Reward == GroundTruthRL {
		truth := make([]string, len(prompts))
		for i, p := range prompts {
			truth[i] = p.Truth
		}
		return NewGroundTruth(truth), nil
	}
	return NewStrategy(c.Reward)
}

// intrinsicSignals fills the per-sample numbers the intrinsic and judge
// strategies reward.
// It adds each scoring pass's forward FLOPs to the scoring member's
// JudgeFLOPs.
func intrinsicSignals(members []*Member, prompts []Prompt, rollouts []Rollout, groups [][]Group, c Config, met *record.Round, note func(string)) error {
	micro := max(c.MicroBatch, 1)
	switch c.Reward {
	case SelfCertainty, Entropy:
		for i, m := range members {
			note("score " + m.Name)
			flops, err := SelfSignals(m, rollouts[i], groups[i], micro, SamplingTemp(c))
			if err != nil {
				return err
			}
			met.Models[i].JudgeFLOPs += flops
		}
	case PeerJudge:
		if len(members) < 2 {
			return fmt.Errorf("%s: needs at least 2 models", PeerJudge)
		}
		for i := range members {
			j := (i - 1 + len(members)) % len(members)
			judge := members[j]
			note(fmt.Sprintf("judge %s by %s", members[i].Name, judge.Name))
			scores, flops, err := JudgeScores(judge, prompts, rollouts[i], micro)
			if err != nil {
				return err
			}
			met.Models[j].JudgeFLOPs += flops
			if err := SetJudgeScores(groups[i], scores); err != nil {
				return err
			}
		}
	}
	return nil
}
