package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/spec"
)

// QuerySweep is the sweep's progress query.
const QuerySweep = "progress"

// Axis is one key of a sweep's grid and the values it takes.
type Axis struct {
	Key    string            `json:"key"` // a dotted spec key: "optim.learning_rate", "reward.mode", "seed", "members"; or MethodAxis
	Values []json.RawMessage `json:"values"`
}

// MethodAxis is the grid key whose values each set several spec keys
// together: an object of dotted keys to values, and an optional "name"
// that labels the cell and becomes its runs' spec.method, the report's
// label ({"name": "self-vote", "reward.mode": "self-vote", "members":
// [...]}). The rows of a comparison (ground truth, self-vote,
// Co-RL cohorts) are one such axis crossed with seeds.
const MethodAxis = "method"

// SweepInput is a sweep: a base run spec and a grid over spec keys. Every
// combination of the axes' values (the cartesian product, first axis
// slowest) is one cell, one child CohortRun.
type SweepInput struct {
	Name        string       `json:"name"`
	Base        spec.RunSpec `json:"base"` // decoded over the defaults, as a run's spec
	Grid        []Axis       `json:"grid"`
	MaxParallel int          `json:"max_parallel"` // cells running at once (0: 1)
	// Timeouts passed to each run (seconds; 0: defaults).
	HeartbeatTimeout     int `json:"heartbeat_timeout_s,omitempty"`
	ScheduleToStartLimit int `json:"schedule_to_start_timeout_s,omitempty"`
	// Recorded lists the cells whose runs are recorded already, in a
	// results directory's records (corl sweep --recorded): they are not
	// run again, so a sweep resumes from what a repository holds on a
	// server that never ran it.
	Recorded []int `json:"recorded,omitempty"`
}

// Cell is one run of a sweep.
type Cell struct {
	Index  int           `json:"index"`
	ID     string        `json:"id"`    // the child workflow's ID: the sweep's ID and the index
	Label  string        `json:"label"` // "optim.learning_rate=0.0003,seed=2"
	State  string        `json:"state"` // pending, running, done, done earlier, recorded, failed
	Error  string        `json:"error,omitempty"`
	Result *Result       `json:"result,omitempty"`
	Evals  []EvalSummary `json:"-"`
}

// SweepProgress is the progress query's answer and the sweep's result.
type SweepProgress struct {
	Name  string `json:"name"`
	Cells []Cell `json:"cells"`
}

// Sweep runs every cell of the grid as a child CohortRun with a
// deterministic ID, at most MaxParallel at once. Run again under the same
// ID, it skips the cells that completed (their IDs are taken; their results
// are read back) and reruns the ones that failed.
func Sweep(ctx workflow.Context, in SweepInput) (*SweepProgress, error) {
	// Cells is a pure function of the input (encoding/json with sorted map
	// keys), so replays expand the same grid; workflowcheck cannot see that
	// through reflection.
	specs, labels, err := Cells(in) //workflowcheck:ignore
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrBadSpec, nil)
	}
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	prog := &SweepProgress{Name: in.Name, Cells: make([]Cell, len(specs))}
	for i := range specs {
		prog.Cells[i] = Cell{Index: i, ID: fmt.Sprintf("%s.cell-%03d", id, i), Label: labels[i], State: "pending"}
	}
	if err := workflow.SetQueryHandler(ctx, QuerySweep, func() (SweepProgress, error) { return *prog, nil }); err != nil {
		return nil, err
	}
	resultCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: pipeline.CPUPool, StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 5},
	})
	parallel := max(in.MaxParallel, 1)
	sel := workflow.NewSelector(ctx)
	running, next := 0, 0
	start := func(i int) {
		c := &prog.Cells[i]
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: c.ID, TaskQueue: pipeline.WorkflowQueue,
			// A completed cell is not run twice; a failed one may be.
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
			// Cancelling the sweep cancels its cells (each checkpoints).
			ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		})
		c.State = "running"
		running++
		f := workflow.ExecuteChildWorkflow(cctx, CohortRun, Input{RunSpec: specs[i],
			HeartbeatTimeout: in.HeartbeatTimeout, ScheduleToStartLimit: in.ScheduleToStartLimit})
		sel.AddFuture(f, func(f workflow.Future) {
			running--
			var res Result
			err := f.Get(ctx, &res)
			switch {
			case err == nil:
				c.State, c.Result = "done", &res
			case temporal.IsWorkflowExecutionAlreadyStartedError(err):
				// Completed by an earlier run of this sweep: read its result
				// (refused when that run had another spec: the grid changed).
				if err := workflow.ExecuteActivity(resultCtx, pipeline.RunResult, c.ID, &specs[i]).Get(ctx, &res); err != nil {
					c.State, c.Error = "failed", err.Error()
					return
				}
				c.State, c.Result = "done earlier", &res
			default:
				c.State, c.Error = "failed", err.Error()
			}
		})
	}
	for next < len(specs) || running > 0 {
		for running < parallel && next < len(specs) {
			if slices.Contains(in.Recorded, next) {
				prog.Cells[next].State = "recorded"
			} else {
				start(next)
			}
			next++
		}
		if running > 0 {
			sel.Select(ctx)
		}
	}
	return prog, nil
}

// Cells expands a sweep into its cells' run specs and labels, in order: the
// cartesian product of the grid, the first axis varying slowest. Each cell's
// spec is the base with the cell's values set through the spec's JSON, so
// any key a spec file can hold can be swept.
func Cells(in SweepInput) ([]spec.RunSpec, []string, error) {
	known := spec.Keys()
	methods := make([][]method, len(in.Grid)) // the method axis's values, parsed once
	for i, ax := range in.Grid {
		if ax.Key != MethodAxis && !slices.Contains(known, ax.Key) {
			return nil, nil, fmt.Errorf("grid[%d].key: %q is not a run spec key; have %s", i, ax.Key, strings.Join(known, ", "))
		}
		if len(ax.Values) == 0 {
			return nil, nil, fmt.Errorf("grid[%d] (%s): no values", i, ax.Key)
		}
		if ax.Key != MethodAxis {
			continue
		}
		for j, v := range ax.Values {
			m, err := methodKeys(v)
			if err != nil {
				return nil, nil, fmt.Errorf("grid[%d] (%s) value %d: %w", i, ax.Key, j, err)
			}
			for _, k := range m.keys {
				if !slices.Contains(known, k) {
					return nil, nil, fmt.Errorf("grid[%d] (%s) value %d: %q is not a run spec key", i, ax.Key, j, k)
				}
			}
			methods[i] = append(methods[i], m)
		}
	}
	n := 1
	for _, ax := range in.Grid {
		n *= len(ax.Values)
	}
	specs, labels := make([]spec.RunSpec, n), make([]string, n)
	for c := 0; c < n; c++ {
		var settings []spec.Setting
		var parts []string
		rest := c
		for i := len(in.Grid) - 1; i >= 0; i-- { // the last axis varies fastest
			ax := in.Grid[i]
			j := rest % len(ax.Values)
			v := ax.Values[j]
			rest /= len(ax.Values)
			if ax.Key == MethodAxis {
				m := methods[i][j]
				if m.named {
					settings = append(settings, spec.Setting{Key: "method", Value: m.name})
				}
				for _, k := range m.keys {
					settings = append(settings, spec.Setting{Key: k, Value: m.values[k]})
				}
				parts = append([]string{ax.Key + "=" + m.name}, parts...)
				continue
			}
			var val any
			if err := json.Unmarshal(v, &val); err != nil {
				return nil, nil, fmt.Errorf("grid %s: value %s: %w", ax.Key, v, err)
			}
			settings = append(settings, spec.Setting{Key: ax.Key, Value: val})
			parts = append([]string{ax.Key + "=" + compact(v)}, parts...)
		}
		specs[c] = in.Base
		if err := spec.Set(&specs[c], settings...); err != nil {
			return nil, nil, fmt.Errorf("cell %d (%s): %w", c, strings.Join(parts, ","), err)
		}
		labels[c] = strings.Join(parts, ",")
	}
	return specs, labels, nil
}

// method is one value of the method axis: its label and the spec keys it
// sets, sorted.
type method struct {
	name   string
	named  bool // the name is the value's "name", and the cells' spec.method
	keys   []string
	values map[string]any
}

func methodKeys(v json.RawMessage) (method, error) {
	var m method
	if err := json.Unmarshal(v, &m.values); err != nil {
		return m, fmt.Errorf("want an object of spec keys to values: %w", err)
	}
	if n, ok := m.values["name"]; ok {
		s, isString := n.(string)
		if !isString || s == "" {
			return m, fmt.Errorf("name: want a non-empty string, got %v", n)
		}
		m.name, m.named = s, true
		delete(m.values, "name")
	}
	if len(m.values) == 0 {
		return m, fmt.Errorf("sets no spec key")
	}
	for k := range m.values {
		m.keys = append(m.keys, k)
	}
	slices.Sort(m.keys)
	if m.name == "" {
		m.name = compact(v)
	}
	return m, nil
}

// compact is a value as a label shows it.
func compact(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}
