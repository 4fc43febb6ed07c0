package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/corl-project/corl/activities"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/spec"
)

func raw(vs ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(vs))
	for i, v := range vs {
		out[i] = json.RawMessage(v)
	}
	return out
}

func testSweep() SweepInput {
	return SweepInput{Name: "s", Base: testSpec(2), MaxParallel: 2, Grid: []Axis{
		{Key: "reward.mode", Values: raw(`"peer-ring"`, `"self-vote"`)},
		{Key: "seed", Values: raw("1", "2", "3")},
	}}
}

func TestCellsAreTheGridsProduct(t *testing.T) {
	specs, labels, err := Cells(testSweep())
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 6 || labels[0] != "reward.mode=peer-ring,seed=1" || labels[5] != "reward.mode=self-vote,seed=3" {
		t.Fatalf("labels %v", labels)
	}
	if specs[4].Reward.Mode != "self-vote" || specs[4].Seed != 2 || specs[4].Rounds != 2 || len(specs[4].Members) != 2 {
		t.Errorf("cell 4: %+v", specs[4])
	}
	bad := testSweep()
	bad.Grid[1].Key = "optim.lr"
	if _, _, err := Cells(bad); err == nil || !strings.Contains(err.Error(), `"optim.lr" is not a run spec key`) || !strings.Contains(err.Error(), "optim.learning_rate") {
		t.Errorf("bad key: %v", err)
	}
}

// TestMethodAxisSetsKeysTogether: a method value sets all of its keys in
// one cell (a different reward, cohort and budget), is labelled by its
// name (the cell's label and its spec.method, the report's), and crosses
// with the other axes; a key it does not know, or a
// name that is not a string, is refused naming the value.
func TestMethodAxisSetsKeysTogether(t *testing.T) {
	in := testSweep()
	in.Grid = []Axis{
		{Key: MethodAxis, Values: raw(`{"name": "gt", "reward.mode": "ground-truth"}`,
			`{"name": "matched", "reward.mode": "self-vote", "rounds": 4, "max_flops": 1e12, "members": [{"name": "a", "base": "x"}]}`)},
		{Key: "seed", Values: raw("1", "2")},
	}
	specs, labels, err := Cells(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(labels, " ") != "method=gt,seed=1 method=gt,seed=2 method=matched,seed=1 method=matched,seed=2" {
		t.Fatalf("labels %v", labels)
	}
	if s := specs[1]; s.Reward.Mode != "ground-truth" || len(s.Members) != 2 || s.Rounds != 2 || s.Seed != 2 {
		t.Errorf("cell 1: %+v", s)
	}
	if s := specs[2]; s.Reward.Mode != "self-vote" || len(s.Members) != 1 || s.Rounds != 4 || s.MaxFLOPs != 1e12 || s.Seed != 1 {
		t.Errorf("cell 2: %+v", s)
	}
	if specs[0].Method != "gt" || specs[3].Method != "matched" {
		t.Errorf("the cells' spec.method: %q and %q, want the values' names gt and matched", specs[0].Method, specs[3].Method)
	}
	in.Grid[0].Values = raw(`{"reward.mode": "self-vote"}`)
	if specs, _, err := Cells(in); err != nil || specs[0].Method != "" {
		t.Errorf("a value without a name: method %q (%v), want none (the report names it)", specs[0].Method, err)
	}
	for value, want := range map[string]string{
		`{"name": "x", "optim.lr": 1}`: `value 0: "optim.lr" is not a run spec key`,
		`{"name": 3, "seed": 1}`:       "value 0: name: want a non-empty string",
		`{"name": "x"}`:                "value 0: sets no spec key",
		`[1, 2]`:                       "value 0: want an object",
	} {
		in.Grid[0].Values = raw(value)
		if _, _, err := Cells(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", value, err, want)
		}
	}
}

// sweepEnv mocks the child runs: each takes a minute of test clock;
// started records the children's IDs and specs.
func sweepEnv(t *testing.T, fail func(id string) error) (*testsuite.TestWorkflowEnvironment, *sync.Map) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(CohortRun)
	env.RegisterActivity(&activities.Activities{})
	env.RegisterActivityWithOptions(activities.ValidateSpec, activity.RegisterOptions{Name: pipeline.ValidateSpec})
	var started sync.Map
	env.OnWorkflow(CohortRun, mock.Anything, mock.Anything).Return(func(ctx workflow.Context, in Input) (*Result, error) {
		id := workflow.GetInfo(ctx).WorkflowExecution.ID
		started.Store(id, fmt.Sprintf("%s/%d", in.Reward.Mode, in.Seed))
		if err := fail(id); err != nil {
			return nil, err
		}
		if err := workflow.Sleep(ctx, time.Minute); err != nil {
			return nil, err
		}
		return &Result{Rounds: in.Rounds}, nil
	})
	return env, &started
}

// TestSweepRunsEveryCellBounded: every cell runs once under a deterministic
// ID, at most two at a time (six one-minute cells take three minutes).
func TestSweepRunsEveryCellBounded(t *testing.T) {
	env, started := sweepEnv(t, func(string) error { return nil })
	begin := env.Now()
	env.ExecuteWorkflow(Sweep, testSweep())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if d := env.Now().Sub(begin); d < 3*time.Minute || d >= 4*time.Minute {
		t.Errorf("sweep took %v of test clock: want 3 minutes for 6 cells two at a time", d)
	}
	var p SweepProgress
	if err := env.GetWorkflowResult(&p); err != nil {
		t.Fatal(err)
	}
	var ids []string
	started.Range(func(k, v any) bool { ids = append(ids, k.(string)+"="+v.(string)); return true })
	sort.Strings(ids)
	want := []string{"default-test-workflow-id.cell-000=peer-ring/1", "default-test-workflow-id.cell-001=peer-ring/2",
		"default-test-workflow-id.cell-002=peer-ring/3", "default-test-workflow-id.cell-003=self-vote/1",
		"default-test-workflow-id.cell-004=self-vote/2", "default-test-workflow-id.cell-005=self-vote/3"}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("children %v", ids)
	}
	for _, c := range p.Cells {
		if c.State != "done" || c.Result == nil || c.Result.Rounds != 2 {
			t.Errorf("cell %+v", c)
		}
	}
}

// TestSweepSkipsCompletedCells: a cell whose ID an earlier run of the sweep
// completed is not run again; its result is read back. A failed cell is
// reported, the others still run.
func TestSweepSkipsCompletedCells(t *testing.T) {
	env, _ := sweepEnv(t, func(id string) error {
		switch {
		case strings.HasSuffix(id, "cell-001"):
			return &temporal.ChildWorkflowExecutionAlreadyStartedError{}
		case strings.HasSuffix(id, "cell-004"):
			return temporal.NewNonRetryableApplicationError("boom", "test", nil)
		}
		return nil
	})
	cells, _, err := Cells(testSweep())
	if err != nil {
		t.Fatal(err)
	}
	env.OnActivity(a.RunResult, mock.Anything, mock.Anything, mock.Anything).Return(func(_ context.Context, id string, want *spec.RunSpec) (json.RawMessage, error) {
		// The cell's own spec goes with its ID, for the earlier run's to be checked against.
		if want == nil || want.Seed != cells[1].Seed || fmt.Sprint(want.Members) != fmt.Sprint(cells[1].Members) {
			return nil, fmt.Errorf("RunResult(%s) was given spec %+v, not cell 1's", id, want)
		}
		return json.RawMessage(`{"rounds": 7}`), nil
	})
	env.ExecuteWorkflow(Sweep, testSweep())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var p SweepProgress
	env.GetWorkflowResult(&p)
	if c := p.Cells[1]; c.State != "done earlier" || c.Result == nil || c.Result.Rounds != 7 {
		t.Errorf("completed cell: %+v", c)
	}
	if c := p.Cells[4]; c.State != "failed" || !strings.Contains(c.Error, "boom") {
		t.Errorf("failed cell: %+v", c)
	}
	if c := p.Cells[5]; c.State != "done" {
		t.Errorf("cell after a failure: %+v", c)
	}
}

// TestSweepLeavesRecordedCells: cells recorded elsewhere are not started,
// including the last ones (the sweep still ends), and say so.
func TestSweepLeavesRecordedCells(t *testing.T) {
	env, started := sweepEnv(t, func(string) error { return nil })
	in := testSweep()
	in.Recorded = []int{0, 2, 4, 5}
	env.ExecuteWorkflow(Sweep, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var p SweepProgress
	if err := env.GetWorkflowResult(&p); err != nil {
		t.Fatal(err)
	}
	var ids []string
	started.Range(func(k, _ any) bool { ids = append(ids, k.(string)); return true })
	sort.Strings(ids)
	if strings.Join(ids, " ") != "default-test-workflow-id.cell-001 default-test-workflow-id.cell-003" {
		t.Errorf("started %v, want cells 1 and 3 only", ids)
	}
	for i, c := range p.Cells {
		want := map[bool]string{true: "recorded", false: "done"}[slices.Contains(in.Recorded, i)]
		if c.State != want {
			t.Errorf("cell %d: state %q, want %q", i, c.State, want)
		}
	}
}
