// Package workflows holds corl's deterministic workflows: CohortRun, one per
// training run. The workflow keeps only small state (round, where each member
// lives, checkpoint keys, metric summaries); everything large travels through
// the blob store as keys. It does no I/O, reads no configuration and iterates
// no maps.
package workflows

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/rl"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/stats"
)

// Names of the run's signals and query.
const (
	SignalPause   = "pause"
	SignalResume  = "resume"
	SignalStop    = "stop"
	QueryProgress = "progress"
)

// Search attributes the run keeps up to date (when UseSearchAttributes).
var (
	AttrRun    = temporal.NewSearchAttributeKeyKeyword("CorlRun")
	AttrReward = temporal.NewSearchAttributeKeyKeyword("CorlReward")
	AttrCohort = temporal.NewSearchAttributeKeyKeywordList("CorlCohort")
	AttrRound  = temporal.NewSearchAttributeKeyInt64("CorlRound")
)

// SearchAttributeTypes lists them for namespace registration.
var SearchAttributeTypes = map[string]enumspb.IndexedValueType{
	"CorlRun": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "CorlReward": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	"CorlCohort": enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST, "CorlRound": enumspb.INDEXED_VALUE_TYPE_INT,
}

// Input is the workflow's argument: the run spec itself (so a plain spec.json
// works with `temporal workflow start --input-file`), plus the state carried
// across continue-as-new.
type Input struct {
	spec.RunSpec
	State               *State `json:"state,omitempty"`
	UseSearchAttributes bool   `json:"use_search_attributes,omitempty"`
	// Timeouts (seconds; 0: defaults). Heartbeat catches a worker that dies
	// mid-activity; schedule-to-start catches a worker queue nobody polls.
	HeartbeatTimeout     int `json:"heartbeat_timeout_s,omitempty"`
	ScheduleToStartLimit int `json:"schedule_to_start_timeout_s,omitempty"`
	// ContinueAsNewEvery > 0 continues the run as new after every that many
	// rounds, besides when the server suggests it (tests, short histories).
	ContinueAsNewEvery int `json:"continue_as_new_every,omitempty"`
}

// UnmarshalJSON decodes the spec over its defaults (spec.RunSpec's own
// decoding: a spec.json that omits keys gets what `corl run` would give) and
// the workflow's fields beside it. Without it the embedded spec's method
// would decode the whole input and drop the carried state.
func (in *Input) UnmarshalJSON(b []byte) error {
	if err := in.RunSpec.UnmarshalJSON(b); err != nil {
		return err
	}
	var rest struct {
		State                *State `json:"state"`
		UseSearchAttributes  bool   `json:"use_search_attributes"`
		HeartbeatTimeout     int    `json:"heartbeat_timeout_s"`
		ScheduleToStartLimit int    `json:"schedule_to_start_timeout_s"`
		ContinueAsNewEvery   int    `json:"continue_as_new_every"`
	}
	if err := json.Unmarshal(b, &rest); err != nil {
		return err
	}
	in.State, in.UseSearchAttributes, in.HeartbeatTimeout, in.ScheduleToStartLimit, in.ContinueAsNewEvery =
		rest.State, rest.UseSearchAttributes, rest.HeartbeatTimeout, rest.ScheduleToStartLimit, rest.ContinueAsNewEvery
	return nil
}

// State is the run's durable state.
type State struct {
	Round           int            `json:"round"` // completed rounds
	Queue           []string       `json:"queue"` // worker queue holding each member ("" = not placed)
	Checkpoint      []string       `json:"checkpoint"`
	CheckpointRound []int          `json:"checkpoint_round"`
	Summaries       []RoundSummary `json:"summaries"` // the latest rounds
	Evals           []EvalSummary  `json:"evals"`
	Paused          bool           `json:"paused"`
	Stopping        bool           `json:"stopping"`
	Stage           string         `json:"stage"`
	Moves           int            `json:"moves"`                 // members re-placed after a lost worker
	Suspect         []string       `json:"suspect,omitempty"`     // queues whose worker timed out since the last placement
	NoEvalSet       bool           `json:"no_eval_set,omitempty"` // the data has no evaluation problems: nothing to evaluate
	Waits           []Wait         `json:"waits,omitempty"`       // what the current stage waits for
	Pool            *PoolView      `json:"pool,omitempty"`        // the pool as last listed while waiting
	Notes           []string       `json:"notes,omitempty"`       // the latest things that went wrong and were worked around
	GenFLOPs        []float64      `json:"generation_flops"`
	UpdateFLOPs     []float64      `json:"update_flops"`
	JudgeFLOPs      []float64      `json:"judge_flops,omitempty"` // self-certainty and entropy scoring passes
	// PlannedRounds and PlannedWarmup are a budgeted run's plan after its
	// first round (spec.Plan; 0: none), kept across continue-as-new.
	PlannedRounds  int     `json:"planned_rounds,omitempty"`
	PlannedWarmup  int     `json:"planned_warmup,omitempty"`
	ComputeSeconds float64 `json:"compute_seconds"` // inside activities, summed over the critical path
	RoundSeconds   float64 `json:"round_seconds"`   // wall time of rounds
}

// RoundSummary is what the workflow keeps of a round.
type RoundSummary struct {
	Round   int            `json:"round"`
	Diag    rl.Diagnostics `json:"diagnostics"`
	Loss    []float64      `json:"loss"`
	Seconds float64        `json:"seconds"`
	// Stages is the wall time of each stage of the round (the workflow's
	// clock: members in parallel), and of the checkpoint and evaluation
	// that followed it, when they did.
	Stages map[string]float64 `json:"stage_seconds,omitempty"`
}

// EvalSummary is a held-out evaluation: every member on the original
// wording and on its own view, and the cohort's vote.
type EvalSummary struct {
	Round          int              `json:"round"`
	PassAt1        []float64        `json:"pass_at_1"`
	PassAt1OwnView []float64        `json:"pass_at_1_own_view"`
	PassAt1CI      []stats.Interval `json:"pass_at_1_ci"`                // 95% bootstrap over problems
	SampledPassAt1 []float64        `json:"sampled_pass_at_1,omitempty"` // with eval.samples
	MajAtK         []float64        `json:"maj_at_k,omitempty"`
	Cohort         rl.CohortResult  `json:"cohort_vote"`
}

// Progress is the query result.
type Progress struct {
	Name     string        `json:"name"`
	Round    int           `json:"round"`
	Rounds   int           `json:"rounds"`
	Stage    string        `json:"stage"`
	Paused   bool          `json:"paused"`
	Stopping bool          `json:"stopping"`
	Members  []string      `json:"members"`
	Queues   []string      `json:"queues"`
	Last     *RoundSummary `json:"last,omitempty"`
	Evals    []EvalSummary `json:"evals"`
	Moves    int           `json:"moves"`
	Notes    []string      `json:"notes,omitempty"`
	Overhead float64       `json:"temporal_overhead"` // 1 - compute/wall over finished rounds
	Waits    []Wait        `json:"waits,omitempty"`
	Pool     *PoolView     `json:"pool,omitempty"`
}

// Result is the workflow's return value.
type Result struct {
	Rounds         int           `json:"rounds"`
	Members        []string      `json:"members,omitempty"`
	Checkpoints    []string      `json:"checkpoints"`
	Evals          []EvalSummary `json:"evals"`
	Stopped        bool          `json:"stopped"`
	Moves          int           `json:"moves"`
	ComputeSeconds float64       `json:"compute_seconds"`
	RoundSeconds   float64       `json:"round_seconds"`
	GenFLOPs       []float64     `json:"generation_flops"`
	UpdateFLOPs    []float64     `json:"update_flops"`
	JudgeFLOPs     []float64     `json:"judge_flops,omitempty"`
}

const keepSummaries = 20

// CohortRun trains the spec's cohort round by round.
func CohortRun(ctx workflow.Context, in Input) (_ *Result, err error) {
	s := in.RunSpec
	// Every bad key at once, before any work. (Versioned: histories
	// recorded before this step replay without it.)
	if workflow.GetVersion(ctx, "validate-spec", workflow.DefaultVersion, 1) == 1 {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
		if err := workflow.ExecuteLocalActivity(lctx, pipeline.ValidateSpec, s).Get(ctx, nil); err != nil {
			return nil, err
		}
	}
	n := len(s.Members)
	if n == 0 || s.Rounds <= 0 { // what the state below needs, whatever validation said
		return nil, temporal.NewNonRetryableApplicationError("run spec has no members or no rounds", pipeline.ErrBadSpec, nil)
	}
	st := in.State
	if st == nil {
		st = &State{Queue: make([]string, n), Checkpoint: make([]string, n), CheckpointRound: make([]int, n),
			GenFLOPs: make([]float64, n), UpdateFLOPs: make([]float64, n)}
	}
	s.ApplyPlan(st.PlannedRounds, st.PlannedWarmup) // after continue-as-new: as planned
	hb := time.Duration(max(in.HeartbeatTimeout, 0)) * time.Second
	if hb == 0 {
		hb = 60 * time.Second
	}
	s2s := time.Duration(max(in.ScheduleToStartLimit, 0)) * time.Second
	if s2s == 0 {
		s2s = 5 * time.Minute
	}
	// Activity options: the member's own queue for model work (one attempt
	// beyond the first: a dead queue is caught by schedule-to-start), the
	// pools for placement and grading.
	// Waits on a member's queue are watched against the pool's listing,
	// and a failed attempt is retried by the workflow, on the same worker
	// unless that worker is lost (versioned: histories recorded before
	// replay with the server's retry and without the timers).
	attempts := int32(2)
	var watch time.Duration
	if workflow.GetVersion(ctx, "watch-queues", workflow.DefaultVersion, 1) == 1 {
		attempts, watch = 1, min(s2s, 30*time.Second)
	}
	members := onMembers{watch: watch, opts: func(queue string) workflow.Context {
		return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue: queue, ScheduleToStartTimeout: s2s, StartToCloseTimeout: 6 * time.Hour, HeartbeatTimeout: hb,
			RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: attempts,
				NonRetryableErrorTypes: memberNonRetryable},
		})
	}}
	poolOpts := workflow.ActivityOptions{
		TaskQueue: pipeline.GPUPool, ScheduleToCloseTimeout: 24 * time.Hour, StartToCloseTimeout: time.Hour, HeartbeatTimeout: hb,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{pipeline.ErrBadSpec}},
	}
	poolCtx := workflow.WithActivityOptions(ctx, poolOpts)
	cpuCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: pipeline.CPUPool, ScheduleToCloseTimeout: 24 * time.Hour, StartToCloseTimeout: time.Hour, HeartbeatTimeout: hb,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{pipeline.ErrBadSpec}},
	})

	if err := workflow.SetQueryHandler(ctx, QueryProgress, func() (Progress, error) { return progressOf(&s, st), nil }); err != nil {
		return nil, err
	}
	sigs := []struct {
		name string
		fn   func()
	}{{SignalPause, func() { st.Paused = true }}, {SignalResume, func() { st.Paused = false }}, {SignalStop, func() { st.Stopping = true }}}
	for _, sg := range sigs {
		ch := workflow.GetSignalChannel(ctx, sg.name)
		fn := sg.fn
		workflow.Go(ctx, func(ctx workflow.Context) {
			for {
				ch.Receive(ctx, nil)
				fn()
			}
		})
	}
	if in.UseSearchAttributes {
		if err := workflow.UpsertTypedSearchAttributes(ctx, AttrRun.ValueSet(s.Name), AttrReward.ValueSet(s.Reward.Mode),
			AttrCohort.ValueSet(s.MemberNames()), AttrRound.ValueSet(int64(st.Round))); err != nil {
			return nil, err
		}
	}
	run := workflow.GetInfo(ctx).WorkflowExecution.ID
	ref := func(i int) pipeline.MemberRef {
		return pipeline.MemberRef{Spec: s, Member: i, Round: st.Round, Run: run}
	}

	// place puts every unplaced member on a worker from the pool, restoring
	// the newest checkpoint and replaying the rounds after it. Members go to
	// the least loaded live worker that has a free slot (placeByCapacity),
	// else share the least loaded one; without a list of workers, to
	// whichever worker takes the pool's task.
	byCapacity := workflow.GetVersion(ctx, "placement-by-capacity", workflow.DefaultVersion, 1) == 1
	place := func() error {
		var pool []pipeline.WorkerInfo
		listed := false
		// Workers that just timed out, or did not take a placement, are
		// not asked again in this placement (each ask waits up to 30 s).
		skip := map[string]bool{}
		for _, q := range st.Suspect {
			skip[q] = true
		}
		defer func() { st.Suspect = nil }()
		for i := 0; i < n; i++ {
			if st.Queue[i] != "" {
				continue
			}
			st.Stage = "placing " + s.Members[i].Name
			st.Waits = []Wait{{Member: s.Members[i].Name, Activity: "acquire", Queue: pipeline.GPUPool, Since: workflow.Now(ctx)}}
			var acq pipeline.AcquireOutput
			in := pipeline.AcquireInput{MemberRef: ref(i), CheckpointKey: st.Checkpoint[i], CheckpointRound: st.CheckpointRound[i]}
			placed := false
			if byCapacity {
				if !listed {
					pool, listed = listWorkers(ctx), true
				}
				var err error
				if placed, err = placeByCapacity(ctx, pool, st.Queue, skip, in, min(s2s, 30*time.Second), hb, &acq); err != nil {
					return err
				}
			}
			if !placed {
				if err := workflow.ExecuteActivity(poolCtx, pipeline.Acquire, in).Get(ctx, &acq); err != nil {
					return err
				}
			}
			st.Waits = nil
			if acq.Note != "" {
				st.note(fmt.Sprintf("round %d: %s", st.Round, acq.Note))
			}
			if acq.Round < st.Round {
				st.Stage = fmt.Sprintf("replaying %s rounds %d-%d", s.Members[i].Name, acq.Round+1, st.Round)
				rin := pipeline.ReplayInput{MemberRef: pipeline.MemberRef{Spec: s, Member: i, Round: acq.Round, Run: run}, From: acq.Round, To: st.Round}
				var reached int
				c := members.start(i, acq.Queue, "replay", pipeline.Replay, rin)
				errs := members.await(ctx, &s, st, []*call{c}, func(_ int, f workflow.Future) error { return f.Get(ctx, &reached) })
				if err := errs[0]; err != nil {
					if lost(err) {
						st.Moves++
						continue // that worker is gone too: next round of placement
					}
					return err
				}
			}
			st.Queue[i] = acq.Queue
		}
		return nil
	}

	// A cancelled run (`temporal workflow cancel`) saves where it is, as a
	// stop does: the checkpoint runs in a context that the cancellation
	// does not reach (members and place read ctx and poolCtx). A run
	// that fails, or is cancelled after its last checkpoint, releases its
	// members too. (Terminated and timed-out runs run no code: workers
	// reclaim their members, see activities.Acquire.)
	defer func() {
		if err == nil || workflow.IsContinueAsNewError(err) {
			return
		}
		canceled := temporal.IsCanceledError(err)
		if canceled && !allCheckpointed(st) {
			ctx, _ = workflow.NewDisconnectedContext(ctx)
			poolCtx = workflow.WithActivityOptions(ctx, poolOpts)
			st.Stage = "cancelled: checkpointing"
			if cerr := checkpointAll(ctx, &s, st, members, ref, place); cerr != nil {
				workflow.GetLogger(ctx).Error("checkpoint after cancel failed", "error", cerr)
			}
			releaseAll(ctx, &s, st, ref)
			return
		}
		if canceled {
			ctx, _ = workflow.NewDisconnectedContext(ctx)
		}
		if workflow.GetVersion(ctx, "release-on-failure", workflow.DefaultVersion, 1) == 1 {
			releaseAll(ctx, &s, st, ref)
		}
	}()

	for st.Round < s.Rounds && !st.Stopping && !s.BudgetSpent(st.spentFLOPs()) {
		if st.Paused {
			st.Stage = "paused"
			if err := workflow.Await(ctx, func() bool { return !st.Paused || st.Stopping }); err != nil {
				return nil, err
			}
			continue
		}
		if err := place(); err != nil {
			return nil, err
		}
		if !allPlaced(st.Queue) {
			continue
		}
		if st.Round == 0 && len(st.Evals) == 0 && !st.NoEvalSet {
			// The bases' scores, so every later evaluation has its baseline.
			if err := evaluateAll(ctx, &s, st, members, ref, place); err != nil {
				return nil, err
			}
			continue
		}
		roundStart := workflow.Now(ctx)
		done, err := runRound(ctx, &s, st, members, cpuCtx, ref)
		if err != nil {
			return nil, err
		}
		if !done {
			continue // a member was lost: re-place and run the round again
		}
		secs := workflow.Now(ctx).Sub(roundStart).Seconds()
		st.RoundSeconds += secs
		st.Summaries[len(st.Summaries)-1].Seconds = secs
		st.Round++
		// A budget plans the rounds it pays for after the first, and the
		// learning rate anneals over them (versioned: histories recorded
		// before ran the spec's schedule).
		if st.Round == 1 && st.PlannedRounds == 0 && s.MaxFLOPs > 0 {
			if n, w := s.Plan(st.spentFLOPs()); n > 0 && workflow.GetVersion(ctx, "plan-by-budget", workflow.DefaultVersion, 1) == 1 {
				st.PlannedRounds, st.PlannedWarmup = n, w
				s.ApplyPlan(n, w)
				st.note(fmt.Sprintf("round 1: max_flops %.3g: the first round cost %.3g FLOPs, so the budget pays for %d of the %d rounds; the learning rate anneals over those",
					s.MaxFLOPs, st.spentFLOPs(), n, in.RunSpec.Rounds))
			}
		}
		last := s.LastRound(st.Round, st.spentFLOPs())
		if s.CheckpointAfter(st.Round, last) || st.Stopping {
			t0 := workflow.Now(ctx)
			if err := checkpointAll(ctx, &s, st, members, ref, place); err != nil {
				return nil, err
			}
			noteStage(st, "checkpoint", workflow.Now(ctx).Sub(t0).Seconds())
		}
		// As the local runner: no evaluation without evaluation problems
		// (versioned: histories recorded before evaluated anyway).
		skipEval := st.NoEvalSet && workflow.GetVersion(ctx, "skip-empty-eval", workflow.DefaultVersion, 1) == 1
		if !skipEval && s.EvaluateAfter(st.Round, last) {
			t0 := workflow.Now(ctx)
			if err := evaluateAll(ctx, &s, st, members, ref, place); err != nil {
				return nil, err
			}
			noteStage(st, "evaluate", workflow.Now(ctx).Sub(t0).Seconds())
		}
		if in.UseSearchAttributes {
			if err := workflow.UpsertTypedSearchAttributes(ctx, AttrRound.ValueSet(int64(st.Round))); err != nil {
				return nil, err
			}
		}
		due := in.ContinueAsNewEvery > 0 && st.Round%in.ContinueAsNewEvery == 0
		if (due || workflow.GetInfo(ctx).GetContinueAsNewSuggested()) && !last && !st.Stopping {
			next := in
			next.State = st
			return nil, workflow.NewContinueAsNewError(ctx, CohortRun, next)
		}
	}
	if st.Stopping && st.Round < s.Rounds && !allCheckpointed(st) {
		// A stop between checkpoints: save where we are.
		if err := checkpointAll(ctx, &s, st, members, ref, place); err != nil {
			return nil, err
		}
	}
	releaseAll(ctx, &s, st, ref)
	st.Stage = "done"
	return &Result{Rounds: st.Round, Members: s.MemberNames(), Checkpoints: st.Checkpoint, Evals: st.Evals, Stopped: st.Round < s.Rounds, Moves: st.Moves,
		ComputeSeconds: st.ComputeSeconds, RoundSeconds: st.RoundSeconds, GenFLOPs: st.GenFLOPs, UpdateFLOPs: st.UpdateFLOPs,
		JudgeFLOPs: st.JudgeFLOPs}, nil
}

// spentFLOPs is the run's FLOPs so far, as the schedule counts them.
func (st *State) spentFLOPs() float64 {
	return spec.SpentFLOPs(st.GenFLOPs, st.UpdateFLOPs, st.JudgeFLOPs)
}

// listWorkers is the pool's live workers (activities.Workers), or none
// when the list cannot be had: placement then goes through the pool queue.
func listWorkers(ctx workflow.Context) []pipeline.WorkerInfo {
	lctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: pipeline.CPUPool,
		ScheduleToCloseTimeout: 2 * time.Minute, StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3}})
	var ws []pipeline.WorkerInfo
	if err := workflow.ExecuteActivity(lctx, pipeline.Workers).Get(ctx, &ws); err != nil {
		workflow.GetLogger(ctx).Warn("cannot list the pool's workers; placing through the pool queue", "error", err)
		return nil
	}
	return ws
}

// placeByCapacity asks the pool's workers in order of load (members of this
// run held per slot, then name) to take the member within their slots; when
// every worker is full, the least loaded one takes it beyond them. A worker
// that does not pick the task up within s2s, or fails it, is added to skip
// (shared by the placements of one round), and workers in skip are not asked.
// placed is false when no worker took it: the caller places through the
// pool queue.
func placeByCapacity(ctx workflow.Context, pool []pipeline.WorkerInfo, queues []string, skip map[string]bool, in pipeline.AcquireInput,
	s2s, hb time.Duration, acq *pipeline.AcquireOutput) (placed bool, err error) {
	load := map[string]int{}
	for _, q := range queues {
		load[q]++
	}
	order := slices.Clone(pool)
	slices.SortStableFunc(order, func(x, y pipeline.WorkerInfo) int {
		// load/slots compared without division
		if c := cmp.Compare(load[x.Queue]*y.Slots, load[y.Queue]*x.Slots); c != 0 {
			return c
		}
		return strings.Compare(x.Queue, y.Queue)
	})
	for _, within := range []bool{true, false} {
		for _, w := range order {
			if skip[w.Queue] {
				continue
			}
			wctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
				TaskQueue: w.Queue, ScheduleToStartTimeout: s2s, StartToCloseTimeout: time.Hour, HeartbeatTimeout: hb,
				RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 2,
					NonRetryableErrorTypes: []string{pipeline.ErrBadSpec, pipeline.ErrWorkerFull}},
			})
			try := in
			try.WithinSlots = within
			err := workflow.ExecuteActivity(wctx, pipeline.Acquire, try).Get(ctx, acq)
			var ae *temporal.ApplicationError
			switch {
			case err == nil:
				return true, nil
			case errors.As(err, &ae) && ae.Type() == pipeline.ErrBadSpec:
				return false, err
			case errors.As(err, &ae) && ae.Type() == pipeline.ErrWorkerFull:
				continue
			default: // gone, or failing: not this worker
				skip[w.Queue] = true
			}
		}
	}
	return false, nil
}

// noteStage records a stage that followed the last round (checkpoint,
// evaluation) in its summary.
func noteStage(st *State, stage string, secs float64) {
	if len(st.Summaries) == 0 {
		return
	}
	last := &st.Summaries[len(st.Summaries)-1]
	if last.Stages == nil {
		last.Stages = map[string]float64{}
	}
	last.Stages[stage] += secs
}

func allPlaced(q []string) bool {
	for _, x := range q {
		if x == "" {
			return false
		}
	}
	return true
}

func allCheckpointed(st *State) bool {
	for _, r := range st.CheckpointRound {
		if r != st.Round {
			return false
		}
	}
	return true
}

// lost reports whether an activity error means the member's worker is gone
// (its queue is not polled, it stopped heartbeating, or it no longer holds
// the member), so the member must be placed again.
func lost(err error) bool {
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		return true
	}
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.Type() == pipeline.ErrMemberNotHere
}

// markLost clears placements whose activity failed with a lost-worker error
// and returns the first other error.
func markLost(st *State, errs []error) (anyLost bool, err error) {
	for i, e := range errs {
		if e == nil {
			continue
		}
		if lost(e) {
			var te *temporal.TimeoutError
			if errors.As(e, &te) && !slices.Contains(st.Suspect, st.Queue[i]) {
				st.Suspect = append(st.Suspect, st.Queue[i])
			}
			st.Queue[i] = ""
			st.Moves++
			anyLost = true
			continue
		}
		if err == nil {
			err = e
		}
	}
	return anyLost, err
}

// runRound runs generate -> (judge) -> grade -> update for round st.Round. It
// returns false when a member was lost on the way (the round will run again
// from generate: every output key is a function of the round, so redone work
// overwrites itself).
func runRound(ctx workflow.Context, s *spec.RunSpec, st *State, members onMembers,
	cpuCtx workflow.Context, ref func(int) pipeline.MemberRef) (bool, error) {
	n := len(s.Members)
	var compute float64
	stages := map[string]float64{}
	mark := workflow.Now(ctx)
	lap := func(stage string) {
		now := workflow.Now(ctx)
		stages[stage] = now.Sub(mark).Seconds()
		mark = now
	}
	st.Stage = fmt.Sprintf("round %d: generate", st.Round+1)
	gens := make([]pipeline.GenerateOutput, n)
	calls := make([]*call, n)
	for i := 0; i < n; i++ {
		calls[i] = members.start(i, st.Queue[i], "generate", pipeline.Generate, ref(i))
	}
	errs := members.await(ctx, s, st, calls, func(i int, f workflow.Future) error { return f.Get(ctx, &gens[i]) })
	if anyLost, err := markLost(st, errs); err != nil || anyLost {
		return false, err
	}
	keys := make([]string, n)
	secs := make([]float64, n)
	for i, g := range gens {
		keys[i] = g.Key
		secs[i] = g.Seconds
		st.GenFLOPs[i] += g.FLOPs
		if g.JudgeFLOPs > 0 {
			if len(st.JudgeFLOPs) < n { // a state from before judge FLOPs were kept
				st.JudgeFLOPs = append(st.JudgeFLOPs, make([]float64, n-len(st.JudgeFLOPs))...)
			}
			st.JudgeFLOPs[i] += g.JudgeFLOPs
		}
	}
	compute += criticalPath(st.Queue, secs)
	lap("generate")
	var judgeKeys []string
	if s.Reward.Mode == rl.PeerJudge {
		st.Stage = fmt.Sprintf("round %d: judge", st.Round+1)
		judgeKeys = make([]string, n)
		for i := 0; i < n; i++ {
			j := (i - 1 + n) % n
			jin := pipeline.JudgeInput{MemberRef: ref(j), Target: i, Key: keys[i]}
			calls[i] = members.start(j, st.Queue[j], "judge", pipeline.Judge, jin)
		}
		errs = members.await(ctx, s, st, calls, func(i int, f workflow.Future) error { return f.Get(ctx, &judgeKeys[i]) })
		if anyLost, err := markLost(st, shiftToJudges(errs)); err != nil || anyLost {
			return false, err
		}
		lap("judge")
	}
	st.Stage = fmt.Sprintf("round %d: grade", st.Round+1)
	var grade pipeline.GradeOutput
	gin := pipeline.GradeInput{Spec: *s, Run: workflow.GetInfo(ctx).WorkflowExecution.ID, Round: st.Round, Rollouts: keys, JudgeKeys: judgeKeys}
	st.Waits = []Wait{{Activity: "grade", Queue: pipeline.CPUPool, Since: workflow.Now(ctx)}}
	err := workflow.ExecuteActivity(cpuCtx, pipeline.Grade, gin).Get(ctx, &grade)
	st.Waits = nil
	if err != nil {
		return false, err
	}
	compute += grade.Seconds
	lap("grade")
	st.Stage = fmt.Sprintf("round %d: update", st.Round+1)
	ups := make([]pipeline.UpdateOutput, n)
	for i := 0; i < n; i++ {
		calls[i] = members.start(i, st.Queue[i], "update", pipeline.Update, ref(i))
	}
	errs = members.await(ctx, s, st, calls, func(i int, f workflow.Future) error { return f.Get(ctx, &ups[i]) })
	if anyLost, err := markLost(st, errs); err != nil || anyLost {
		return false, err
	}
	lap("update")
	sum := RoundSummary{Round: st.Round + 1, Diag: grade.Diag, Loss: make([]float64, n), Stages: stages}
	if st.Round == 0 { // the first round says whether learning is possible at all
		for _, w := range grade.Diag.Warnings(s.MemberNames()) {
			st.note("round 1: " + w)
		}
	}
	for _, w := range grade.Diag.Collapse(s.MemberNames()) {
		// Once per member (and once for the cohort) while it lasts in the notes.
		what := w[:strings.Index(w+":", ":")]
		if !slices.ContainsFunc(st.Notes, func(n string) bool { return strings.Contains(n, "collaps") && strings.Contains(n, ": "+what) }) {
			st.note(fmt.Sprintf("round %d: %s", st.Round+1, w))
		}
	}
	for i, u := range ups {
		sum.Loss[i] = u.Stats.Loss
		secs[i] = u.Seconds
		st.UpdateFLOPs[i] += u.FLOPs
	}
	compute += criticalPath(st.Queue, secs)
	st.ComputeSeconds += compute
	st.Summaries = append(st.Summaries, sum)
	if len(st.Summaries) > keepSummaries {
		st.Summaries = st.Summaries[len(st.Summaries)-keepSummaries:]
	}
	return true, nil
}

// criticalPath is the compute time of a parallel stage: a worker runs its
// members' activities one after another, workers run side by side.
func criticalPath(queues []string, secs []float64) float64 {
	var longest float64
	for i := range queues {
		var sum float64
		for j := range queues {
			if queues[j] == queues[i] {
				sum += secs[j]
			}
		}
		longest = max(longest, sum)
	}
	return longest
}

// shiftToJudges attributes judge errors (indexed by target) to the judge.
func shiftToJudges(errs []error) []error {
	n := len(errs)
	out := make([]error, n)
	for i, e := range errs {
		out[(i-1+n)%n] = e
	}
	return out
}

// releaseAll has every worker that holds a member forget it: the run has
// ended and its checkpoints are stored, so a long-lived worker does not keep
// finished runs' models. Best effort (a worker that is gone holds nothing);
// versioned, so histories recorded before it replay.
func releaseAll(ctx workflow.Context, s *spec.RunSpec, st *State, ref func(int) pipeline.MemberRef) {
	if workflow.GetVersion(ctx, "release-members", workflow.DefaultVersion, 1) != 1 {
		return
	}
	st.Stage = "releasing members"
	var futs []workflow.Future
	for i, q := range st.Queue {
		if q == "" {
			continue
		}
		rctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: q,
			ScheduleToStartTimeout: 30 * time.Second, StartToCloseTimeout: time.Minute,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
		futs = append(futs, workflow.ExecuteActivity(rctx, pipeline.Release, ref(i)))
	}
	for _, f := range futs {
		_ = f.Get(ctx, nil) // nothing to do if it failed: the worker is gone
	}
}

// forEachMember runs one activity per member (start(i), its result read by
// get) until every member's has succeeded. A member whose worker is lost is
// placed again (newest checkpoint, the rounds since replayed) and its
// activity runs again; members already done are not rerun. Any other error
// ends it.
func forEachMember(ctx workflow.Context, s *spec.RunSpec, st *State, members onMembers, activity string, fn any,
	ref func(int) pipeline.MemberRef, place func() error, get func(i int, f workflow.Future) error) error {
	n := len(st.Queue)
	done := make([]bool, n)
	for {
		for !allPlaced(st.Queue) {
			if err := place(); err != nil {
				return err
			}
		}
		calls := make([]*call, n)
		for i := range calls {
			if !done[i] {
				calls[i] = members.start(i, st.Queue[i], activity, fn, ref(i))
			}
		}
		errs := members.await(ctx, s, st, calls, func(i int, f workflow.Future) error {
			err := get(i, f)
			done[i] = err == nil
			return err
		})
		anyLost, err := markLost(st, errs)
		if err != nil {
			return err
		}
		if !anyLost {
			return nil
		}
	}
}

// checkpointAll saves every member at st.Round.
func checkpointAll(ctx workflow.Context, s *spec.RunSpec, st *State, members onMembers,
	ref func(int) pipeline.MemberRef, place func() error) error {
	st.Stage = fmt.Sprintf("round %d: checkpoint", st.Round)
	return forEachMember(ctx, s, st, members, "checkpoint", pipeline.Checkpoint, ref, place,
		func(i int, f workflow.Future) error {
			var key string
			if err := f.Get(ctx, &key); err != nil {
				return err
			}
			st.Checkpoint[i], st.CheckpointRound[i] = key, st.Round
			return nil
		})
}

// evaluateAll runs held-out evaluation on every member and the cohort vote.
// Every stored score was computed: a member lost mid-evaluation is placed
// again and evaluated again.
func evaluateAll(ctx workflow.Context, s *spec.RunSpec, st *State, members onMembers,
	ref func(int) pipeline.MemberRef, place func() error) error {
	n := len(s.Members)
	st.Stage = fmt.Sprintf("round %d: evaluate", st.Round)
	outs := make([]pipeline.EvalOutput, n)
	err := forEachMember(ctx, s, st, members, "evaluate", pipeline.Evaluate, ref, place,
		func(i int, f workflow.Future) error { return f.Get(ctx, &outs[i]) })
	if err != nil {
		return err
	}
	if len(outs[0].Correct) == 0 {
		// No evaluation problems (data.file_split: none, or a file without
		// labelled held-out rows): a score of 0 would be a lie.
		st.NoEvalSet = true
		return nil
	}
	ev := EvalSummary{Round: st.Round, PassAt1: make([]float64, n), PassAt1OwnView: make([]float64, n), PassAt1CI: make([]stats.Interval, n)}
	if s.Eval.Samples > 0 {
		ev.SampledPassAt1, ev.MajAtK = make([]float64, n), make([]float64, n)
	}
	for i, o := range outs {
		ev.PassAt1[i], ev.PassAt1OwnView[i], ev.PassAt1CI[i] = o.PassAt1, o.PassAt1OwnView, o.PassAt1CI
		if s.Eval.Samples > 0 {
			ev.SampledPassAt1[i], ev.MajAtK[i] = o.SampledPassAt1, o.MajAtK
		}
	}
	ev.Cohort = cohortVote(outs)
	st.Evals = append(st.Evals, ev)
	return nil
}

// cohortVote is rl.CohortVote over the members' pooled evaluation answers.
func cohortVote(outs []pipeline.EvalOutput) rl.CohortResult {
	answers := make([][][]string, len(outs))
	for i, o := range outs {
		answers[i] = o.Pool
	}
	return rl.CohortVote(answers, func(p int, a string) bool { return a == outs[0].Truth[p] })
}

func progressOf(s *spec.RunSpec, st *State) Progress {
	p := Progress{Name: s.Name, Round: st.Round, Rounds: s.Rounds, Stage: st.Stage, Paused: st.Paused, Stopping: st.Stopping,
		Members: s.MemberNames(), Queues: st.Queue, Evals: st.Evals, Moves: st.Moves, Notes: st.Notes, Waits: st.Waits, Pool: st.Pool}
	if len(st.Summaries) > 0 {
		last := st.Summaries[len(st.Summaries)-1]
		p.Last = &last
	}
	if st.RoundSeconds > 0 {
		p.Overhead = 1 - st.ComputeSeconds/st.RoundSeconds
	}
	return p
}
