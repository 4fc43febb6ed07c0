package workflows

import (
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/stats"
)

// runRound runs generate -> (judge) -> grade -> update for round st.Round. It
// returns false when a member was lost on the way (the round will run again
// from generate: every output key is a function of the round, so redone work
// overwrites itself).
func (r *cohortRun) runRound() (bool, error) {
	s, st, members, ref := &r.s, r.st, r.members, r.ref
	n := len(s.Members)
	var compute float64
	stages := map[string]float64{}
	mark := workflow.Now(r.ctx)
	lap := func(stage string) {
		now := workflow.Now(r.ctx)
		stages[stage] = now.Sub(mark).Seconds()
		mark = now
	}
	st.Stage = fmt.Sprintf("round %d: generate", st.Round+1)
	gens := make([]pipeline.GenerateOutput, n)
	calls := make([]*call, n)
	for i := 0; i < n; i++ {
		calls[i] = members.start(i, st.Queue[i], "generate", pipeline.Generate, ref(i))
	}
	errs := members.await(r.ctx, s, st, calls, func(i int, f workflow.Future) error { return f.Get(r.ctx, &gens[i]) })
	if anyLost, err := markLost(st, errs); err != nil || anyLost {
		return false, err
	}
	keys := make([]string, n)
	secs := make([]float64, n)
	for i, g := range gens {
		keys[i] = g.Key
		secs[i] = g.Seconds
		st.GenFLOPs[i] += g.FLOPs
		st.AddJudge(i, n, g.JudgeFLOPs)
	}
	compute += criticalPath(st.Queue, secs)
	lap("generate")
	var judgeKeys []string
	if s.Reward.Mode == spec.PeerJudge {
		st.Stage = fmt.Sprintf("round %d: judge", st.Round+1)
		judgeKeys = make([]string, n)
		for i := 0; i < n; i++ {
			j := (i - 1 + n) % n
			jin := pipeline.JudgeInput{MemberRef: ref(j), Target: i, Key: keys[i]}
			calls[i] = members.start(j, st.Queue[j], "judge", pipeline.Judge, jin)
		}
		errs = members.await(r.ctx, s, st, calls, func(i int, f workflow.Future) error { return f.Get(r.ctx, &judgeKeys[i]) })
		if anyLost, err := markLost(st, shiftToJudges(errs)); err != nil || anyLost {
			return false, err
		}
		lap("judge")
	}
	st.Stage = fmt.Sprintf("round %d: grade", st.Round+1)
	var grade pipeline.GradeOutput
	gin := pipeline.GradeInput{Spec: *s, Run: r.run, Round: st.Round, Rollouts: keys, JudgeKeys: judgeKeys}
	st.Waits = []Wait{{Activity: "grade", Queue: pipeline.CPUPool, Since: workflow.Now(r.ctx)}}
	err := workflow.ExecuteActivity(r.cpuCtx(), pipeline.Grade, gin).Get(r.ctx, &grade)
	st.Waits = nil
	if err != nil {
		return false, err
	}
	compute += grade.Seconds
	for i, f := range grade.JudgeFLOPs[:min(len(grade.JudgeFLOPs), n)] { // peer-judge: each judge's scoring pass
		st.AddJudge(i, n, f)
	}
	lap("grade")
	st.Stage = fmt.Sprintf("round %d: update", st.Round+1)
	ups := make([]pipeline.UpdateOutput, n)
	for i := 0; i < n; i++ {
		calls[i] = members.start(i, st.Queue[i], "update", pipeline.Update, ref(i))
	}
	errs = members.await(r.ctx, s, st, calls, func(i int, f workflow.Future) error { return f.Get(r.ctx, &ups[i]) })
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

// releaseAll has every worker that holds a member forget it: the run has
// ended and its checkpoints are stored, so a long-lived worker does not keep
// finished runs' models. Best effort (a worker that is gone holds nothing);
// versioned, so histories recorded before it replay.
func (r *cohortRun) releaseAll() {
	st, ref := r.st, r.ref
	if workflow.GetVersion(r.ctx, "release-members", workflow.DefaultVersion, 1) != 1 {
		return
	}
	st.Stage = "releasing members"
	var futs []workflow.Future
	for i, q := range st.Queue {
		if q == "" {
			continue
		}
		rctx := workflow.WithActivityOptions(r.ctx, r.opts.release(q))
		futs = append(futs, workflow.ExecuteActivity(rctx, pipeline.Release, ref(i)))
	}
	for _, f := range futs {
		_ = f.Get(r.ctx, nil) // nothing to do if it failed: the worker is gone
	}
}

// forEachMember runs one activity per member (start(i), its result read by
// get) until every member's has succeeded. A member whose worker is lost is
// placed again (newest checkpoint, the rounds since replayed) and its
// activity runs again; members already done are not rerun. Any other error
// ends it.
func (r *cohortRun) forEachMember(activity string, fn any, get func(i int, f workflow.Future) error) error {
	s, st, members, ref := &r.s, r.st, r.members, r.ref
	n := len(st.Queue)
	done := make([]bool, n)
	for {
		for !allPlaced(st.Queue) {
			if err := r.place(); err != nil {
				return err
			}
		}
		calls := make([]*call, n)
		for i := range calls {
			if !done[i] {
				calls[i] = members.start(i, st.Queue[i], activity, fn, ref(i))
			}
		}
		errs := members.await(r.ctx, s, st, calls, func(i int, f workflow.Future) error {
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
func (r *cohortRun) checkpointAll() error {
	st := r.st
	st.Stage = fmt.Sprintf("round %d: checkpoint", st.Round)
	return r.forEachMember("checkpoint", pipeline.Checkpoint,
		func(i int, f workflow.Future) error {
			var key string
			if err := f.Get(r.ctx, &key); err != nil {
				return err
			}
			st.Checkpoint[i], st.CheckpointRound[i] = key, st.Round
			return nil
		})
}

// evaluateAll runs held-out evaluation on every member and the cohort vote.
// Every stored score was computed: a member lost mid-evaluation is placed
// again and evaluated again.
func (r *cohortRun) evaluateAll() error {
	s, st := &r.s, r.st
	n := len(s.Members)
	st.Stage = fmt.Sprintf("round %d: evaluate", st.Round)
	outs := make([]pipeline.EvalOutput, n)
	err := r.forEachMember("evaluate", pipeline.Evaluate,
		func(i int, f workflow.Future) error { return f.Get(r.ctx, &outs[i]) })
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
	pools := make([][][]string, n)
	for i, o := range outs {
		pools[i] = o.Pool
	}
	ev.Cohort = record.Vote(pools, outs[0].Truth)
	st.Evals = append(st.Evals, ev)
	return nil
}
