package history

import (
	"context"
	"fmt"
	"slices"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/spec"
)

// Runs returns the events of every run of the workflow ID, oldest run
// first, following the continue-as-new chain back from the latest run.
func Runs(ctx context.Context, cl client.Client, id string) ([][]*historypb.HistoryEvent, error) {
	var runs [][]*historypb.HistoryEvent
	runID := ""
	for range 10000 {
		events, err := events(ctx, cl, id, runID, 0)
		if err != nil {
			return nil, err
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

// events reads one run's history (runID "": the latest run), its first n
// events (0: all).
func events(ctx context.Context, cl client.Client, id, runID string, n int) ([]*historypb.HistoryEvent, error) {
	it := cl.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []*historypb.HistoryEvent
	for it.HasNext() && (n == 0 || len(out) < n) {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", id, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// StartedSpec is the run spec the workflow ID was started with: its first
// run's input (a run continued as new may carry a spec its workflow
// changed, a budget's planned rounds).
func StartedSpec(ctx context.Context, cl client.Client, id string) (spec.RunSpec, error) {
	first := func(runID string) (*historypb.HistoryEvent, error) {
		e, err := events(ctx, cl, id, runID, 1)
		if err != nil {
			return nil, err
		}
		if len(e) == 0 {
			return nil, fmt.Errorf("run %s: no history", id)
		}
		return e[0], nil
	}
	e, err := first("")
	if err != nil {
		return spec.RunSpec{}, err
	}
	if run := e.GetWorkflowExecutionStartedEventAttributes().GetFirstExecutionRunId(); run != "" {
		if e, err = first(run); err != nil {
			return spec.RunSpec{}, err
		}
	}
	return inputSpec(id, e)
}

// inputSpec decodes the run spec of a workflow's started event (the
// workflow input embeds it, with the workflow's own fields beside).
func inputSpec(id string, started *historypb.HistoryEvent) (spec.RunSpec, error) {
	var in struct{ spec.RunSpec }
	if err := decode(started.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err != nil {
		return spec.RunSpec{}, fmt.Errorf("run %s: its input: %w", id, err)
	}
	return in.RunSpec, nil
}

// Children lists the child runs a workflow (a sweep) started, in order,
// once each.
func Children(ctx context.Context, cl client.Client, id string) ([]string, error) {
	runs, err := Runs(ctx, cl, id)
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

// Run is a cohort run read back from its history.
type Run struct {
	Spec     spec.RunSpec // as started
	Records  *pipeline.Records
	Complete bool // the workflow completed
}

// ReadRun reads a CohortRun's spec and records from its history, across
// every continue-as-new. A round's numbers are its activities' last
// completed results (a retried or re-placed activity counts once).
func ReadRun(ctx context.Context, cl client.Client, id string) (*Run, error) {
	runs, err := Runs(ctx, cl, id)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("workflow %s has no history", id)
	}
	s, err := inputSpec(id, runs[0][0])
	if err != nil {
		return nil, err
	}
	r := &Run{Spec: s, Records: pipeline.NewRecords(s)}
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
			if s := scheduled[done.GetScheduledEventId()]; s != nil {
				if err := add(r.Records, s, done); err != nil {
					return nil, fmt.Errorf("run %s: %s: %w", id, s.GetActivityType().GetName(), err)
				}
			}
		}
	}
	return r, nil
}

// add gives one completed activity's input and result to the records.
func add(rec *pipeline.Records, s *historypb.ActivityTaskScheduledEventAttributes, done *historypb.ActivityTaskCompletedEventAttributes) error {
	switch s.GetActivityType().GetName() {
	case pipeline.Generate:
		return with(s, done, rec.Generated)
	case pipeline.Grade:
		return with(s, done, rec.Graded)
	case pipeline.Update:
		return with(s, done, rec.Updated)
	case pipeline.Evaluate:
		return with(s, done, rec.Evaluated)
	}
	return nil
}

// with decodes an activity's input and result and hands them to add.
func with[In, Out any](s *historypb.ActivityTaskScheduledEventAttributes, done *historypb.ActivityTaskCompletedEventAttributes, add func(In, Out)) error {
	var in In
	var out Out
	if err := decode(s.GetInput(), &in); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if err := decode(done.GetResult(), &out); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	add(in, out)
	return nil
}

func decode(p *commonpb.Payloads, v any) error {
	return converter.GetDefaultDataConverter().FromPayloads(p, v)
}
