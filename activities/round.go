package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/checker"
	"github.com/corl-project/corl/cohort"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/rl"
	"github.com/corl-project/corl/spec"
)

// Generate samples the member's completions for the round's prompts and
// stores them (with the intrinsic signals the reward may need).
func (a *Activities) Generate(ctx context.Context, ref pipeline.MemberRef) (pipeline.GenerateOutput, error) {
	defer a.exclusive(ctx, fmt.Sprintf("round %d generate %s", ref.Round, memberName(ref)))()
	h, err := a.member(ref)
	if err != nil {
		return pipeline.GenerateOutput{}, err
	}
	d, err := a.runData(&ref.Spec)
	if err != nil {
		return pipeline.GenerateOutput{}, err
	}
	start := time.Now()
	c := rl.ConfigFromSpec(&ref.Spec)
	prompts := cohort.PromptsForRound(d.RL, ref.Spec.Seed, ref.Round, ref.Spec.PromptsPerRound)
	ro, err := rl.Generate(h.member, ref.Member, prompts, c, ref.Round)
	if errors.Is(err, model.ErrCacheType) {
		// Retrying on this worker cannot help: the spec asks for a cache
		// its backend or the model cannot hold.
		return pipeline.GenerateOutput{}, badSpec(fmt.Errorf("generation.kv_cache: %w", err))
	}
	if errors.Is(err, model.ErrWeightType) {
		return pipeline.GenerateOutput{}, badSpec(fmt.Errorf("generation.weights: %w", err))
	}
	if err != nil {
		return pipeline.GenerateOutput{}, err
	}
	groups := ro.Groups()
	out := pipeline.GenerateOutput{Key: blob.RolloutKey(h.run, ref.Round, h.member.Name)}
	if c.Reward == rl.SelfCertainty || c.Reward == rl.Entropy {
		if out.JudgeFLOPs, err = rl.SelfSignals(h.member, ro, groups, c.MicroBatch, rl.SamplingTemp(c)); err != nil {
			return pipeline.GenerateOutput{}, err
		}
	}
	out.Tokens, out.FLOPs = ro.Cost(h.member.Model)
	parsed, n := 0, 0
	for _, row := range ro {
		for _, cp := range row {
			n++
			if cp.Answer != "" {
				parsed++
			}
		}
	}
	if n > 0 {
		out.ParseRate = float64(parsed) / float64(n)
	}
	b, err := json.Marshal(rolloutBlob{Member: h.member.Name, Round: ref.Round, Rollout: ro, Groups: groups})
	if err != nil {
		return pipeline.GenerateOutput{}, err
	}
	if err := a.Store.Put(ctx, out.Key, b); err != nil {
		return pipeline.GenerateOutput{}, err
	}
	out.Seconds = time.Since(start).Seconds()
	a.Metrics.Stage(h.run, h.member.Name, "generate", out.Seconds, activity.GetInfo(ctx).Attempt)
	a.Metrics.Work(h.run, h.member.Name, "generate", "generated", out.Tokens, out.FLOPs)
	return out, nil
}

func (a *Activities) loadRollout(ctx context.Context, key string) (*rolloutBlob, error) {
	b, err := a.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	var rb rolloutBlob
	if err := json.Unmarshal(b, &rb); err != nil {
		return nil, fmt.Errorf("rollout %s: %w", a.Store.URI(key), err)
	}
	return &rb, nil
}

// Judge has the (judge) member score another member's completions.
func (a *Activities) Judge(ctx context.Context, in pipeline.JudgeInput) (string, error) {
	defer a.exclusive(ctx, fmt.Sprintf("round %d judge by %s", in.Round, memberName(in.MemberRef)))()
	h, err := a.member(in.MemberRef)
	if err != nil {
		return "", err
	}
	d, err := a.runData(&in.Spec)
	if err != nil {
		return "", err
	}
	rb, err := a.loadRollout(ctx, in.Key)
	if err != nil {
		return "", err
	}
	prompts := cohort.PromptsForRound(d.RL, in.Spec.Seed, in.Round, in.Spec.PromptsPerRound)
	scores, flops, err := rl.JudgeScores(h.member, prompts, rb.Rollout, in.Spec.MicroBatchSize)
	if err != nil {
		return "", err
	}
	a.Metrics.Work(h.run, h.member.Name, "judge", "judged", 0, flops)
	key := blob.JudgeKey(h.run, in.Round, in.Spec.Members[in.Target].Name)
	b, _ := json.Marshal(judgeBlob{Scores: scores, FLOPs: flops})
	return key, a.Store.Put(ctx, key, b)
}

// Grade computes rewards and advantages for every member and the round's
// diagnostics. It needs no model: it runs on the CPU pool.
func (a *Activities) Grade(ctx context.Context, in pipeline.GradeInput) (pipeline.GradeOutput, error) {
	// Heartbeat so that a grading worker that dies is noticed within the
	// heartbeat timeout, not the (long) start-to-close one.
	defer heartbeat(ctx, func() any { return fmt.Sprintf("round %d grade", in.Round) })()
	start := time.Now()
	s := &in.Spec
	d, err := a.runData(s)
	if err != nil {
		return pipeline.GradeOutput{}, err
	}
	prompts := cohort.PromptsForRound(d.RL, s.Seed, in.Round, s.PromptsPerRound)
	groups := make([][]rl.Group, len(in.Rollouts))
	rollouts := make([]rl.Rollout, len(in.Rollouts))
	var judgeFLOPs []float64
	for i, key := range in.Rollouts {
		rb, err := a.loadRollout(ctx, key)
		if err != nil {
			return pipeline.GradeOutput{}, err
		}
		groups[i], rollouts[i] = rb.Groups, rb.Rollout
		if i < len(in.JudgeKeys) && in.JudgeKeys[i] != "" {
			b, err := a.Store.Get(ctx, in.JudgeKeys[i])
			if err != nil {
				return pipeline.GradeOutput{}, err
			}
			jb, err := readJudgeBlob(b)
			if err != nil {
				return pipeline.GradeOutput{}, fmt.Errorf("%s: %w", in.JudgeKeys[i], err)
			}
			if err := rl.SetJudgeScores(groups[i], jb.Scores); err != nil {
				return pipeline.GradeOutput{}, err
			}
			// The judge of member i is member i-1: the scoring's cost is its.
			if judgeFLOPs == nil {
				judgeFLOPs = make([]float64, len(in.Rollouts))
			}
			judgeFLOPs[(i-1+len(in.Rollouts))%len(in.Rollouts)] += jb.FLOPs
		}
	}
	c := rl.ConfigFromSpec(s)
	if c.Checker != nil {
		views := make([]int, len(s.Members))
		for i, m := range s.Members {
			views[i] = m.View
		}
		run := func(ctx context.Context, items []checker.Item) ([]checker.Verdict, error) {
			return a.check(ctx, *c.Checker, blob.CheckKey(in.RunKey(), in.Round, checker.Key(*c.Checker, items)), items)
		}
		prompts = slices.Clone(prompts)
		if err := rl.Check(ctx, run, prompts, views, rollouts, groups, c.Reward == rl.GroundTruthRL); err != nil {
			if errors.Is(err, checker.ErrTimeout) || ctx.Err() != nil {
				return pipeline.GradeOutput{}, err
			}
			// A checker that crashed or answered garbage does so again.
			return pipeline.GradeOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrChecker, err)
		}
	}
	graded, err := rl.Grade(c, prompts, groups)
	var bad *rl.RewardError
	if errors.As(err, &bad) {
		return pipeline.GradeOutput{}, badSpec(err)
	}
	if err != nil {
		return pipeline.GradeOutput{}, err
	}
	gb := gradeBlob{Round: in.Round, Diag: graded.Diag, Advantages: graded.Advantages}
	key := blob.GradeKey(in.RunKey(), in.Round)
	b, _ := json.Marshal(gb)
	if err := a.Store.Put(ctx, key, b); err != nil {
		return pipeline.GradeOutput{}, err
	}
	secs := time.Since(start).Seconds()
	run := in.RunKey()
	for i, md := range gb.Diag.Models {
		a.Metrics.Round(run, s.Members[i].Name, md.RewardMean, md.LabeledFrac, md.ModalShare)
	}
	for _, pd := range gb.Diag.Pairs {
		a.Metrics.Agree(run, s.Members[pd.Pair[0]].Name+"/"+s.Members[pd.Pair[1]].Name, pd.Agreement)
	}
	a.Metrics.Stage(run, "", "grade", secs, activity.GetInfo(ctx).Attempt)
	return pipeline.GradeOutput{Key: key, Diag: gb.Diag, Seconds: secs, JudgeFLOPs: judgeFLOPs}, nil
}

// check runs the task's checker on items, or returns the verdicts a
// previous try of the same grade stored under key.
func (a *Activities) check(ctx context.Context, c checker.Spec, key string, items []checker.Item) ([]checker.Verdict, error) {
	if b, err := a.Store.Get(ctx, key); err == nil {
		var vs []checker.Verdict
		if err := json.Unmarshal(b, &vs); err == nil && len(vs) == len(items) {
			return vs, nil
		}
	} else if !errors.Is(err, blob.ErrNotFound) {
		return nil, err
	}
	vs, err := checker.Run(ctx, c, items)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(vs)
	if err != nil {
		return nil, err
	}
	return vs, a.Store.Put(ctx, key, b)
}

// Update applies the member's policy update for the round. A retry after the
// update was applied (its result lost) returns the recorded result instead of
// applying it again.
func (a *Activities) Update(ctx context.Context, ref pipeline.MemberRef) (pipeline.UpdateOutput, error) {
	defer a.exclusive(ctx, fmt.Sprintf("round %d update %s", ref.Round, memberName(ref)))()
	h, ok := a.held[heldKey(ref.RunKey(), ref.Spec.Members[ref.Member].Name)]
	if ok && h.round == ref.Round+1 {
		if st, done := h.stats[ref.Round]; done {
			return st, nil
		}
	}
	h, err := a.member(ref)
	if err != nil {
		return pipeline.UpdateOutput{}, err
	}
	return a.applyUpdate(ctx, h, &ref.Spec, ref.Member, ref.Round)
}

func (a *Activities) applyUpdate(ctx context.Context, h *held, s *spec.RunSpec, member, round int) (pipeline.UpdateOutput, error) {
	start := time.Now()
	rb, err := a.loadRollout(ctx, blob.RolloutKey(h.run, round, h.member.Name))
	if err != nil {
		return pipeline.UpdateOutput{}, err
	}
	b, err := a.Store.Get(ctx, blob.GradeKey(h.run, round))
	if err != nil {
		return pipeline.UpdateOutput{}, err
	}
	var gb gradeBlob
	if err := json.Unmarshal(b, &gb); err != nil {
		return pipeline.UpdateOutput{}, fmt.Errorf("grade of round %d: %w", round, err)
	}
	c := rl.ConfigFromSpec(s)
	us, err := rl.Update(h.member, rb.Rollout, gb.Advantages[member], c, round*s.GRPO.StepsPerRound())
	if err != nil {
		err = classify(err, h.member.Name, round)
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) && ae.Type() == pipeline.ErrNonFinite {
			// The weights may be poisoned: forget the member, so that no
			// checkpoint (a stop notice's included) can write them. The run
			// resumes from its last checkpoint.
			a.forget(heldKey(h.run, h.member.Name))
			a.holding(ctx)
		}
		return pipeline.UpdateOutput{}, err
	}
	out := pipeline.UpdateOutput{Stats: us, Seconds: time.Since(start).Seconds(),
		FLOPs: rl.UpdateFLOPs(h.member.Model, c, us.Tokens)}
	a.Metrics.Stage(h.run, h.member.Name, "update", out.Seconds, activity.GetInfo(ctx).Attempt)
	a.Metrics.Work(h.run, h.member.Name, "update", "trained", us.Tokens, out.FLOPs)
	h.round = round + 1
	h.stats[round] = out
	return out, nil
}

// Replay brings a restored member from round From to round To.
func (a *Activities) Replay(ctx context.Context, in pipeline.ReplayInput) (int, error) {
	defer a.exclusive(ctx, fmt.Sprintf("replay %s rounds %d-%d", memberName(in.MemberRef), in.From+1, in.To))()
	ref := in.MemberRef
	ref.Round = in.From
	h, err := a.member(ref)
	if err != nil {
		return 0, err
	}
	r := in.From
	for ; r < in.To; r++ {
		if _, err := a.applyUpdate(ctx, h, &in.Spec, in.Member, r); err != nil {
			return r, err
		}
	}
	return r, nil
}
