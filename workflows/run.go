package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/spec"
)

// CohortRun trains the spec's cohort round by round.
func CohortRun(ctx workflow.Context, in Input) (_ *Result, err error) {
	r, err := startCohortRun(ctx, in)
	if err != nil {
		return nil, err
	}
	defer func() { r.onExit(err) }()
	return r.rounds()
}

// cohortRun is one execution of CohortRun: its spec, its state, and what
// its stages share. Its methods read the workflow context from r.ctx
// alone, so that a cancelled run's final checkpoint, which replaces
// r.ctx with a context the cancellation does not reach, reaches every
// stage.
type cohortRun struct {
	ctx     workflow.Context
	in      Input
	s       spec.RunSpec // the spec, its schedule as planned
	st      *State
	run     string // the workflow ID: keys every blob of the run
	opts    runOptions
	members onMembers
	// byCapacity places members on the least loaded worker with a free
	// slot (versioned: histories recorded before placed through the pool
	// queue only).
	byCapacity bool
}

// runOptions are every activity option of the run, in one place.
type runOptions struct {
	hb  time.Duration // heartbeat timeout of model work
	s2s time.Duration // schedule-to-start limit on a member's own queue
	// attempts at an activity on a member's queue before the workflow
	// takes over (2 before watch-queues: the server retried).
	attempts int32
}

// validate is the spec check's local activity: one attempt.
func (o runOptions) validate() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}}
}

// member is model work on a member's own worker queue: a dead queue is
// caught by schedule-to-start (and, watched, by the pool's listing).
func (o runOptions) member(queue string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue: queue, ScheduleToStartTimeout: o.s2s, StartToCloseTimeout: 6 * time.Hour, HeartbeatTimeout: o.hb,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: o.attempts,
			NonRetryableErrorTypes: memberNonRetryable},
	}
}

// pool is a placement through the GPU pool's shared queue.
func (o runOptions) pool() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue: pipeline.GPUPool, ScheduleToCloseTimeout: 24 * time.Hour, StartToCloseTimeout: time.Hour, HeartbeatTimeout: o.hb,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{pipeline.ErrBadSpec}},
	}
}

// cpu is grading on the CPU pool.
func (o runOptions) cpu() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue: pipeline.CPUPool, ScheduleToCloseTimeout: 24 * time.Hour, StartToCloseTimeout: time.Hour, HeartbeatTimeout: o.hb,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{pipeline.ErrBadSpec}},
	}
}

// recording writes a run's records to the store, on the CPU pool.
func (o runOptions) recording() workflow.ActivityOptions {
	return workflow.ActivityOptions{TaskQueue: pipeline.CPUPool,
		ScheduleToCloseTimeout: 10 * time.Minute, StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second}}
}

// listing is the pool's list of live workers.
func (o runOptions) listing() workflow.ActivityOptions {
	return workflow.ActivityOptions{TaskQueue: pipeline.CPUPool,
		ScheduleToCloseTimeout: 2 * time.Minute, StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3}}
}

// placing asks one listed worker to take a member: a worker that does
// not pick it up within 30 s (or s2s) is not waited for.
func (o runOptions) placing(queue string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue: queue, ScheduleToStartTimeout: min(o.s2s, 30*time.Second), StartToCloseTimeout: time.Hour, HeartbeatTimeout: o.hb,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 2,
			NonRetryableErrorTypes: []string{pipeline.ErrBadSpec, pipeline.ErrWorkerFull}},
	}
}

// release has a worker forget a member of a run that ended: best effort.
func (o runOptions) release(queue string) workflow.ActivityOptions {
	return workflow.ActivityOptions{TaskQueue: queue,
		ScheduleToStartTimeout: 30 * time.Second, StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}}
}

func (r *cohortRun) poolCtx() workflow.Context {
	return workflow.WithActivityOptions(r.ctx, r.opts.pool())
}
func (r *cohortRun) cpuCtx() workflow.Context {
	return workflow.WithActivityOptions(r.ctx, r.opts.cpu())
}

// ref names member i at the current round.
func (r *cohortRun) ref(i int) pipeline.MemberRef {
	return pipeline.MemberRef{Spec: r.s, Member: i, Round: r.st.Round, Run: r.run}
}

// startCohortRun validates the spec, restores or makes the state, sets
// the options, and registers the query and signals. The order of its
// version markers and commands is what recorded histories replay.
func startCohortRun(ctx workflow.Context, in Input) (*cohortRun, error) {
	r := &cohortRun{ctx: ctx, in: in, s: in.RunSpec}
	s := &r.s
	// Every bad key at once, before any work. (Versioned: histories
	// recorded before this step replay without it.)
	if workflow.GetVersion(ctx, "validate-spec", workflow.DefaultVersion, 1) == 1 {
		lctx := workflow.WithLocalActivityOptions(ctx, r.opts.validate())
		if err := workflow.ExecuteLocalActivity(lctx, pipeline.ValidateSpec, *s).Get(ctx, nil); err != nil {
			return nil, err
		}
	}
	n := len(s.Members)
	if n == 0 || s.Rounds <= 0 { // what the state below needs, whatever validation said
		return nil, temporal.NewNonRetryableApplicationError("run spec has no members or no rounds", pipeline.ErrBadSpec, nil)
	}
	r.st = in.State
	if r.st == nil {
		r.st = &State{Queue: make([]string, n), Checkpoint: make([]string, n), CheckpointRound: make([]int, n),
			Spend: spec.NewSpend(n)}
	}
	st := r.st
	st.Resume(s) // after continue-as-new: as planned
	r.opts.hb = time.Duration(max(in.HeartbeatTimeout, 0)) * time.Second
	if r.opts.hb == 0 {
		r.opts.hb = 60 * time.Second
	}
	r.opts.s2s = time.Duration(max(in.ScheduleToStartLimit, 0)) * time.Second
	if r.opts.s2s == 0 {
		r.opts.s2s = 5 * time.Minute
	}
	// Waits on a member's queue are watched against the pool's listing,
	// and a failed attempt is retried by the workflow, on the same worker
	// unless that worker is lost (versioned: histories recorded before
	// replay with the server's retry and without the timers).
	r.opts.attempts = 2
	var watch time.Duration
	if workflow.GetVersion(ctx, "watch-queues", workflow.DefaultVersion, 1) == 1 {
		r.opts.attempts, watch = 1, min(r.opts.s2s, 30*time.Second)
	}
	r.members = onMembers{watch: watch, list: r.listWorkers, opts: func(queue string) workflow.Context {
		return workflow.WithActivityOptions(r.ctx, r.opts.member(queue))
	}}
	if err := workflow.SetQueryHandler(ctx, QueryProgress, func() (Progress, error) { return progressOf(&r.s, r.st), nil }); err != nil {
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
	r.run = workflow.GetInfo(ctx).WorkflowExecution.ID
	r.byCapacity = workflow.GetVersion(ctx, "placement-by-capacity", workflow.DefaultVersion, 1) == 1
	return r, nil
}

// place puts every unplaced member on a worker from the pool, restoring
// the newest checkpoint and replaying the rounds after it. Members go to
// the least loaded live worker that has a free slot (placeByCapacity),
// else share the least loaded one; without a list of workers, to
// whichever worker takes the pool's task.
func (r *cohortRun) place() error {
	s, st := &r.s, r.st
	var pool []pipeline.WorkerInfo
	listed := false
	// Workers that just timed out, or did not take a placement, are
	// not asked again in this placement (each ask waits up to 30 s).
	skip := map[string]bool{}
	for _, q := range st.Suspect {
		skip[q] = true
	}
	defer func() { st.Suspect = nil }()
	for i := range s.Members {
		if st.Queue[i] != "" {
			continue
		}
		st.Stage = "placing " + s.Members[i].Name
		st.Waits = []Wait{{Member: s.Members[i].Name, Activity: "acquire", Queue: pipeline.GPUPool, Since: workflow.Now(r.ctx)}}
		var acq pipeline.AcquireOutput
		in := pipeline.AcquireInput{MemberRef: r.ref(i), CheckpointKey: st.Checkpoint[i], CheckpointRound: st.CheckpointRound[i]}
		placed := false
		if r.byCapacity {
			if !listed {
				pool, listed = r.listWorkers(), true
			}
			var err error
			if placed, err = r.placeByCapacity(pool, skip, in, &acq); err != nil {
				return err
			}
		}
		if !placed {
			if err := workflow.ExecuteActivity(r.poolCtx(), pipeline.Acquire, in).Get(r.ctx, &acq); err != nil {
				return err
			}
		}
		st.Waits = nil
		if acq.Note != "" {
			st.note(fmt.Sprintf("round %d: %s", st.Round, acq.Note))
		}
		if acq.Round < st.Round {
			st.Stage = fmt.Sprintf("replaying %s rounds %d-%d", s.Members[i].Name, acq.Round+1, st.Round)
			rin := pipeline.ReplayInput{MemberRef: pipeline.MemberRef{Spec: *s, Member: i, Round: acq.Round, Run: r.run}, From: acq.Round, To: st.Round}
			var reached int
			c := r.members.start(i, acq.Queue, "replay", pipeline.Replay, rin)
			errs := r.members.await(r.ctx, s, st, []*call{c}, func(_ int, f workflow.Future) error { return f.Get(r.ctx, &reached) })
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

// onExit runs as the workflow returns with err. A cancelled run
// (`temporal workflow cancel`) saves where it is, as a stop does: the
// checkpoint runs in a context that the cancellation does not reach
// (r.ctx replaced, so every stage uses it). A run that fails, or is
// cancelled after its last checkpoint, releases its members too.
// (Terminated and timed-out runs run no code: workers reclaim their
// members, see activities.Acquire.)
func (r *cohortRun) onExit(err error) {
	if err == nil || workflow.IsContinueAsNewError(err) {
		return
	}
	canceled := temporal.IsCanceledError(err)
	if canceled && !allCheckpointed(r.st) {
		r.ctx, _ = workflow.NewDisconnectedContext(r.ctx)
		r.st.Stage = "cancelled: checkpointing"
		if cerr := r.checkpointAll(); cerr != nil {
			workflow.GetLogger(r.ctx).Error("checkpoint after cancel failed", "error", cerr)
		}
		r.releaseAll()
		return
	}
	if canceled {
		r.ctx, _ = workflow.NewDisconnectedContext(r.ctx)
	}
	if workflow.GetVersion(r.ctx, "release-on-failure", workflow.DefaultVersion, 1) == 1 {
		r.releaseAll()
	}
}

// rounds runs the rounds until the spec's last, a stop, or the budget,
// evaluating and checkpointing on the spec's schedule.
func (r *cohortRun) rounds() (*Result, error) {
	s, st, in := &r.s, r.st, r.in
	for st.Round < s.Rounds && !st.Stopping && !s.BudgetSpent(st.Spent()) {
		if st.Paused {
			st.Stage = "paused"
			if err := workflow.Await(r.ctx, func() bool { return !st.Paused || st.Stopping }); err != nil {
				return nil, err
			}
			continue
		}
		if err := r.place(); err != nil {
			return nil, err
		}
		if !allPlaced(st.Queue) {
			continue
		}
		if st.Round == 0 && len(st.Evals) == 0 && !st.NoEvalSet {
			// The bases' scores, so every later evaluation has its baseline.
			if err := r.evaluateAll(); err != nil {
				return nil, err
			}
			r.writeRecords(false)
			continue
		}
		roundStart := workflow.Now(r.ctx)
		done, err := r.runRound()
		if err != nil {
			return nil, err
		}
		if !done {
			continue // a member was lost: re-place and run the round again
		}
		secs := workflow.Now(r.ctx).Sub(roundStart).Seconds()
		st.RoundSeconds += secs
		st.Summaries[len(st.Summaries)-1].Seconds = secs
		st.Round++
		// A budget plans the rounds it pays for after the first, and the
		// learning rate anneals over them (versioned: histories recorded
		// before ran the spec's schedule).
		if st.Round == 1 && st.PlannedRounds == 0 && s.MaxFLOPs > 0 {
			if n, w := s.Plan(st.Spent()); n > 0 && workflow.GetVersion(r.ctx, "plan-by-budget", workflow.DefaultVersion, 1) == 1 {
				st.Adopt(s, n, w)
				st.note(fmt.Sprintf("round 1: max_flops %.3g: the first round cost %.3g FLOPs, so the budget pays for %d of the %d rounds; the learning rate anneals over those",
					s.MaxFLOPs, st.Spent(), n, in.RunSpec.Rounds))
			}
		}
		last := s.LastRound(st.Round, st.Spent())
		if s.CheckpointAfter(st.Round, last) || st.Stopping {
			t0 := workflow.Now(r.ctx)
			if err := r.checkpointAll(); err != nil {
				return nil, err
			}
			noteStage(st, "checkpoint", workflow.Now(r.ctx).Sub(t0).Seconds())
		}
		// As the local runner: no evaluation without evaluation problems
		// (versioned: histories recorded before evaluated anyway).
		skipEval := st.NoEvalSet && workflow.GetVersion(r.ctx, "skip-empty-eval", workflow.DefaultVersion, 1) == 1
		if !skipEval && s.EvaluateAfter(st.Round, last) {
			t0 := workflow.Now(r.ctx)
			if err := r.evaluateAll(); err != nil {
				return nil, err
			}
			noteStage(st, "evaluate", workflow.Now(r.ctx).Sub(t0).Seconds())
			r.writeRecords(false)
		}
		if in.UseSearchAttributes {
			if err := workflow.UpsertTypedSearchAttributes(r.ctx, AttrRound.ValueSet(int64(st.Round))); err != nil {
				return nil, err
			}
		}
		due := in.ContinueAsNewEvery > 0 && st.Round%in.ContinueAsNewEvery == 0
		if (due || workflow.GetInfo(r.ctx).GetContinueAsNewSuggested()) && !last && !st.Stopping {
			next := in
			next.State = st
			return nil, workflow.NewContinueAsNewError(r.ctx, CohortRun, next)
		}
	}
	if st.Stopping && st.Round < s.Rounds && !allCheckpointed(st) {
		// A stop between checkpoints: save where we are.
		if err := r.checkpointAll(); err != nil {
			return nil, err
		}
	}
	r.writeRecords(true)
	r.releaseAll()
	st.Stage = "done"
	return &Result{Rounds: st.Round, Members: s.MemberNames(), Checkpoints: st.Checkpoint, Evals: st.Evals, Stopped: st.Round < s.Rounds, Moves: st.Moves,
		ComputeSeconds: st.ComputeSeconds, RoundSeconds: st.RoundSeconds, GenFLOPs: st.GenFLOPs, UpdateFLOPs: st.UpdateFLOPs,
		JudgeFLOPs: st.JudgeFLOPs}, nil
}

// writeRecords has the run's records so far written to the store
// (activities.WriteRecords), so that a report reads the store and needs no
// history: after each evaluation and when the run ends (versioned:
// histories recorded before wrote none). A write that fails is noted, not
// fatal: the history holds the same, and the next write replaces it all.
func (r *cohortRun) writeRecords(done bool) {
	if workflow.GetVersion(r.ctx, "write-records", workflow.DefaultVersion, 1) != 1 {
		return
	}
	ctx := workflow.WithActivityOptions(r.ctx, r.opts.recording())
	if err := workflow.ExecuteActivity(ctx, pipeline.WriteRecords, pipeline.RecordsInput{Run: r.run, Done: done}).Get(r.ctx, nil); err != nil {
		r.st.note(fmt.Sprintf("round %d: the records were not written to the store: %v", r.st.Round, err))
	}
}

// listWorkers is the pool's live workers (activities.Workers), or none
// when the list cannot be had: placement then goes through the pool queue.
func (r *cohortRun) listWorkers() []pipeline.WorkerInfo {
	lctx := workflow.WithActivityOptions(r.ctx, r.opts.listing())
	var ws []pipeline.WorkerInfo
	if err := workflow.ExecuteActivity(lctx, pipeline.Workers).Get(r.ctx, &ws); err != nil {
		workflow.GetLogger(r.ctx).Warn("cannot list the pool's workers; placing through the pool queue", "error", err)
		return nil
	}
	return ws
}

// placeByCapacity asks the pool's workers in order of load (members of this
// run held per slot, then name) to take the member within their slots; when
// every worker is full, the least loaded one takes it beyond them. A worker
// that does not pick the task up in time, or fails it, is added to skip
// (shared by the placements of one round), and workers in skip are not asked.
// placed is false when no worker took it: the caller places through the
// pool queue.
func (r *cohortRun) placeByCapacity(pool []pipeline.WorkerInfo, skip map[string]bool, in pipeline.AcquireInput,
	acq *pipeline.AcquireOutput) (placed bool, err error) {
	load := map[string]int{}
	for _, q := range r.st.Queue {
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
			wctx := workflow.WithActivityOptions(r.ctx, r.opts.placing(w.Queue))
			try := in
			try.WithinSlots = within
			err := workflow.ExecuteActivity(wctx, pipeline.Acquire, try).Get(r.ctx, acq)
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
