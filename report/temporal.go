package report

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/pipeline/history"
)

// FromTemporal reads runs back from the server: a CohortRun (by workflow
// ID) is one run, a Sweep is its cells' runs. Nothing is read from the
// store: a run's spec is its workflow input and its per-round metrics and
// evaluations are its activities' results in the workflow history, across
// every continue-as-new (package history reads them, pipeline.Records
// makes them the records a local run writes), so a report can be drawn
// for a run in progress or long finished, from any machine that reaches
// the server.
func FromTemporal(ctx context.Context, cl client.Client, id string) ([]*Run, error) {
	desc, err := cl.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, fmt.Errorf("report: workflow %s: %w", id, err)
	}
	switch kind := desc.GetWorkflowExecutionInfo().GetType().GetName(); kind {
	case pipeline.CohortRunWorkflow:
		r, err := runFromHistory(ctx, cl, id)
		if err != nil {
			return nil, err
		}
		if len(r.Evals) == 0 {
			return nil, fmt.Errorf("report: run %s has no evaluation yet", id)
		}
		return []*Run{r}, nil
	case pipeline.SweepWorkflow:
		children, err := history.Children(ctx, cl, id)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
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

// runFromHistory is a CohortRun's spec, round records and evaluations.
func runFromHistory(ctx context.Context, cl client.Client, id string) (*Run, error) {
	h, err := history.ReadRun(ctx, cl, id)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return &Run{Dir: "temporal:" + id, Spec: h.Spec, Rounds: h.Records.Rounds(), Evals: h.Records.Evals(), Complete: h.Complete}, nil
}
