package report

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/workflows"
)

// FromTemporal reads runs back from the server: a CohortRun (by workflow
// ID) is one run, a Sweep is its cells' runs. Nothing is read from the
// store: a run's spec is its workflow input and its per-round metrics and
// evaluations are its activities' results in the workflow history, across
// every continue-as-new, so a report can be drawn for a run in progress
// or long finished, from any machine that reaches the server.
func FromTemporal(ctx context.Context, cl client.Client, id string) ([]*Run, error) {
	desc, err := cl.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, fmt.Errorf("report: workflow %s: %w", id, err)
	}
	switch kind := desc.GetWorkflowExecutionInfo().GetType().GetName(); kind {
	case "CohortRun":
		r, err := runFromHistory(ctx, cl, id)
		if err != nil {
			return nil, err
		}
		if len(r.Evals) == 0 {
			return nil, fmt.Errorf("report: run %s has no evaluation yet", id)
		}
		return []*Run{r}, nil
	case "Sweep":
		children, err := sweepCells(ctx, cl, id)
		if err != nil {
			return nil, err
		}
		var runs []*Run
		for _, c := range children {
			r, err := runFromHistory(ctx, cl, c)
			if err != nil {
				return nil, fmt.Errorf("sweep %s: %w", id, err)
			}
			if len(r.Evals) > 0 { // a cell not started or not yet evaluated has nothing to show
				runs = append(runs, r)
			}
		}
		if len(runs) == 0 {
			return nil, fmt.Errorf("report: sweep %s has no evaluated cell yet", id)
		}
		return runs, nil
	default:
		return nil, fmt.Errorf("report: workflow %s is a %s, not a CohortRun or a Sweep", id, kind)
	}
}

// history returns the events of every run of the workflow ID, oldest run
// first, following the continue-as-new chain back from the latest run.
func history(ctx context.Context, cl client.Client, id string) ([][]*historypb.HistoryEvent, error) {
	var runs [][]*historypb.HistoryEvent
	runID := ""
	for range 10000 {
		it := cl.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var events []*historypb.HistoryEvent
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return nil, fmt.Errorf("report: history of %s: %w", id, err)
			}
			events = append(events, e)
		}
		if len(events) == 0 {
			break
		}
		runs = append(runs, events)
		runID = events[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if runID == "" {
			break
		}
	}
	slices.Reverse(runs)
	return runs, nil
}

// sweepCells lists the child runs a sweep started, in order, once each.
func sweepCells(ctx context.Context, cl client.Client, id string) ([]string, error) {
	runs, err := history(ctx, cl, id)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, events := range runs {
		for _, e := range events {
			if a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil && !slices.Contains(ids, a.GetWorkflowId()) {
				ids = append(ids, a.GetWorkflowId())
			}
		}
	}
	return ids, nil
}

func decode(p *commonpb.Payloads, v any) error {
	return converter.GetDefaultDataConverter().FromPayloads(p, v)
}

// runFromHistory rebuilds a CohortRun's spec, round metrics and
// evaluations from its history. A round's numbers are its activities'
// last completed results (a retried or re-placed activity counts once).
func runFromHistory(ctx context.Context, cl client.Client, id string) (*Run, error) {
	runs, err := history(ctx, cl, id)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("report: workflow %s has no history", id)
	}
	var in workflows.Input
	if err := decode(runs[0][0].GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err != nil {
		return nil, fmt.Errorf("report: workflow %s input: %w", id, err)
	}
	r := &Run{Dir: "temporal:" + id, Spec: in.RunSpec}
	names := in.RunSpec.MemberNames()
	rounds := map[int]*record.Round{}
	roundOf := func(k int) *record.Round {
		m := rounds[k]
		if m == nil {
			m = &record.Round{Round: k, Reward: r.Spec.Reward.Mode, Models: make([]record.ModelRound, len(names))}
			for i, n := range names {
				m.Models[i].Name = n
			}
			rounds[k] = m
		}
		return m
	}
	evals := map[int][]*pipeline.EvalOutput{}
	for _, events := range runs {
		scheduled := map[int64]*historypb.ActivityTaskScheduledEventAttributes{}
		for _, e := range events {
			if e.GetWorkflowExecutionCompletedEventAttributes() != nil {
				r.Complete = true
			}
			if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
				scheduled[e.GetEventId()] = a
				continue
			}
			done := e.GetActivityTaskCompletedEventAttributes()
			if done == nil {
				continue
			}
			s := scheduled[done.GetScheduledEventId()]
			if s == nil {
				continue
			}
			if err := readActivity(id, s, done, names, roundOf, evals); err != nil {
				return nil, err
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(rounds)) {
		r.Rounds = append(r.Rounds, *rounds[k])
	}
	for _, k := range slices.Sorted(maps.Keys(evals)) {
		if er, ok := evalResult(k, names, r.Spec.Eval.Samples, evals[k]); ok {
			r.Evals = append(r.Evals, er)
		}
	}
	return r, nil
}

// readActivity adds one completed activity's result (a generation, a
// grade, an update or an evaluation) to the run's rounds and evaluations.
func readActivity(id string, s *historypb.ActivityTaskScheduledEventAttributes, done *historypb.ActivityTaskCompletedEventAttributes,
	names []string, roundOf func(int) *record.Round, evals map[int][]*pipeline.EvalOutput) error {
	var ref pipeline.MemberRef
	switch s.GetActivityType().GetName() {
	case "Generate", "Update", "Evaluate":
		if err := decode(s.GetInput(), &ref); err != nil {
			return fmt.Errorf("report: %s %s input: %w", id, s.GetActivityType().GetName(), err)
		}
		if ref.Member < 0 || ref.Member >= len(names) {
			return nil
		}
	}
	switch s.GetActivityType().GetName() {
	case "Generate":
		var g pipeline.GenerateOutput
		if err := decode(done.GetResult(), &g); err != nil {
			return err
		}
		m := &roundOf(ref.Round).Models[ref.Member]
		m.GenTokens, m.GenFLOPs, m.GenSeconds, m.JudgeFLOPs = g.Tokens, g.FLOPs, g.Seconds, g.JudgeFLOPs
	case "Grade":
		var gin pipeline.GradeInput
		var g pipeline.GradeOutput
		if err := decode(s.GetInput(), &gin); err != nil {
			return err
		}
		if err := decode(done.GetResult(), &g); err != nil {
			return err
		}
		m := roundOf(gin.Round)
		m.Diag = g.Diag
		for i, f := range g.JudgeFLOPs { // peer-judge: the judges' scoring
			if i < len(m.Models) {
				m.Models[i].JudgeFLOPs = f
			}
		}
	case "Update":
		var u pipeline.UpdateOutput
		if err := decode(done.GetResult(), &u); err != nil {
			return err
		}
		m := &roundOf(ref.Round).Models[ref.Member]
		u.Stats.Record(m)
		m.UpdateFLOPs, m.UpdateSeconds = u.FLOPs, u.Seconds
	case "Evaluate":
		var o pipeline.EvalOutput
		if err := decode(done.GetResult(), &o); err != nil {
			return err
		}
		if evals[ref.Round] == nil {
			evals[ref.Round] = make([]*pipeline.EvalOutput, len(names))
		}
		evals[ref.Round][ref.Member] = &o
	}
	return nil
}

// evalResult turns one evaluation's member outputs into what a local run
// records, or false while a member's output is missing.
func evalResult(round int, names []string, samples int, outs []*pipeline.EvalOutput) (record.Eval, bool) {
	results := make([]evaluate.Result, len(outs))
	pools := make([][][]string, len(outs))
	own := map[string]evaluate.Result{}
	for i, o := range outs {
		if o == nil {
			return record.Eval{}, false
		}
		res := o.Result(samples)
		if o.SampledCI != nil && o.SampleCorrect == nil {
			// Recorded before outputs carried them: per-problem right
			// samples from the pooled answers and labels, kept only where
			// they add up to the recorded sampled pass@1.
			res.SampleCorrect = sampleCorrect(o, samples)
		}
		if o.OwnView != nil {
			own[names[i]] = *o.OwnView
		}
		results[i], pools[i] = res, o.Pool
	}
	e := record.NewEval(round, names, results, pools, outs[0].Truth)
	if len(own) > 0 {
		e.OwnView = own
	}
	e.PairsValidation = predictorPairs(names, outs)
	return e, true
}

// predictorPairs is the pair predictors on the predictor problems, when
// every member's output carries them.
func predictorPairs(names []string, outs []*pipeline.EvalOutput) map[string]record.PairPredictors {
	results := make([]evaluate.Result, len(outs))
	pools := make([][][]string, len(outs))
	for i, o := range outs {
		if o.Predict == nil {
			return nil
		}
		results[i], pools[i] = evaluate.Result{Correct: o.Predict.Correct}, o.Predict.Pool
	}
	return record.PairsOf(names, results, pools, outs[0].Predict.Truth)
}

// sampleCorrect is each problem's right samples of the pooled answers, or
// nil unless they add up to the output's sampled pass@1.
func sampleCorrect(o *pipeline.EvalOutput, samples int) []int {
	if len(o.Pool) != len(o.Truth) || len(o.Pool) == 0 {
		return nil
	}
	right, total := make([]int, len(o.Pool)), 0.0
	for p, answers := range o.Pool {
		for _, a := range answers {
			if a == o.Truth[p] {
				right[p]++
			}
		}
		total += float64(right[p]) / float64(samples)
	}
	if math.Abs(total/float64(len(o.Pool))-o.SampledPassAt1) >= 1e-9 {
		return nil
	}
	return right
}
