package report

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/pipeline/history"
)

// FromTemporal reads runs by workflow ID: a CohortRun is one run, a Sweep
// is its cells' runs (the server names them). A run's records are read
// from the store, where its workflow writes them (FromStore); a run that
// wrote none, started before workflows wrote records (the write-records
// marker), has them rebuilt from its history as before: its spec the
// workflow input, its rounds and evaluations its activities' results
// across every continue-as-new (package history, pipeline.Records, the
// builder the records in the store are made with). That fallback goes
// with the marker's old branch.
func FromTemporal(ctx context.Context, cl client.Client, store blob.Store, id string) ([]*Run, error) {
	desc, err := cl.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, fmt.Errorf("report: workflow %s: %w", id, err)
	}
	switch kind := desc.GetWorkflowExecutionInfo().GetType().GetName(); kind {
	case pipeline.CohortRunWorkflow:
		r, err := readRun(ctx, cl, store, id)
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
			r, err := readRun(ctx, cl, store, c)
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

// readRun is a CohortRun's records: from the store, else its history.
func readRun(ctx context.Context, cl client.Client, store blob.Store, id string) (*Run, error) {
	if store != nil {
		r, err := FromStore(ctx, store, id)
		if !errors.Is(err, blob.ErrNotFound) {
			return r, err
		}
	}
	return FromHistory(ctx, cl, id)
}

// FromHistory is a CohortRun's spec, round records and evaluations, rebuilt
// from its workflow history.
func FromHistory(ctx context.Context, cl client.Client, id string) (*Run, error) {
	h, err := history.ReadRun(ctx, cl, id)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return &Run{Dir: "temporal:" + id, Spec: h.Spec, Rounds: h.Records.Rounds(), Evals: h.Records.Evals(), Complete: h.Complete}, nil
}
