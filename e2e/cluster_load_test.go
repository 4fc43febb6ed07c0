//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	enums "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corl-project/corl/cli"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/pipeline/history"
	"github.com/corl-project/corl/workflows"
)

// TestClusterLoad (CORL_LOAD=1, `make load`; about 10 minutes, not in CI):
// the production layout under load on its two GPU workers, one slot each.
//   - 20 runs of one 2-round spec started at once: every one completes
//     once, with the in-process trainer's weights (runs sharing workers do
//     not disturb each other), and its records complete in the store;
//   - a 50-cell sweep, 10 cells at a time: every cell done, each child
//     completed once;
//   - one run of 1,000 rounds, continued as new when the server suggests
//     it: it completes, and every run of its chain replays against the
//     workflow code.
//
// Reported: each phase's wall time, the activities' schedule-to-start
// latency (from the histories: started minus scheduled), and the history
// length and size per run.
func TestClusterLoad(t *testing.T) {
	if os.Getenv("CORL_LOAD") != "1" {
		t.Skip("load test: CORL_LOAD=1 (make load), about 10 minutes")
	}
	a, b := bases(t)
	file := specFile(t, "load", a, b, 2)
	want := reference(t, file)
	c := startCluster(t)
	_, cl, store := c.open(t)
	ctx := context.Background()

	// 20 concurrent runs.
	t0 := time.Now()
	var ids []string
	for i := range 20 {
		run, err := cli.StartRun(ctx, cl, store, c.ns, cli.RunFlags{SpecFlags: cli.SpecFlags{File: file}, ID: fmt.Sprintf("load-%02d", i)}, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.GetID())
	}
	var wg sync.WaitGroup
	results := make([]*workflows.Result, len(ids))
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
			defer cancel()
			var res workflows.Result
			errs[i] = cl.GetWorkflow(ctx, id, "").Get(ctx, &res)
			results[i] = &res
		})
	}
	wg.Wait()
	t.Logf("20 concurrent 2-round runs: %.1f s", time.Since(t0).Seconds())
	for i, id := range ids {
		if errs[i] != nil {
			t.Errorf("run %s: %v", id, errs[i])
			continue
		}
		sameWeights(t, id, finalHashes(t, store, results[i]), want)
		if _, err := store.Get(ctx, "runs/"+id+"/records/complete"); err != nil {
			t.Errorf("run %s: records not complete in the store: %v", id, err)
		}
	}
	completedOnce(t, cl, c.ns, ids)
	loadFigures(t, cl, "20 concurrent runs", ids)

	// A 50-cell sweep.
	dir := t.TempDir()
	var seeds []string
	for i := 1; i <= 50; i++ {
		seeds = append(seeds, fmt.Sprint(i))
	}
	sweep := filepath.Join(dir, "sweep.yaml")
	body := fmt.Sprintf("name: load-sweep\nbase: %s\nset: {rounds: 1}\nmax_parallel: 10\ngrid:\n  seed: [%s]\n", file, strings.Join(seeds, ", "))
	if err := os.WriteFile(sweep, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	c.corl(t, "sweep", "-f", sweep, "--id", "load-sweep")
	sctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	var p workflows.SweepProgress
	err := cl.GetWorkflow(sctx, "load-sweep", "").Get(sctx, &p)
	cancel()
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	t.Logf("50-cell sweep, 10 at a time: %.1f s", time.Since(t0).Seconds())
	done := 0
	for _, cell := range p.Cells {
		if cell.State == "done" && cell.Result != nil && cell.Result.Rounds == 1 {
			done++
		} else {
			t.Errorf("sweep cell %+v, want done after 1 round", cell)
		}
	}
	children, err := history.Children(ctx, cl, "load-sweep")
	if err != nil {
		t.Fatal(err)
	}
	if done != 50 || len(children) != 50 {
		t.Errorf("sweep: %d of 50 cells done, %d children started; want 50 and 50", done, len(children))
	}
	completedOnce(t, cl, c.ns, children)
	loadFigures(t, cl, "sweep cells", children)

	// 1,000 rounds, continued as new at the server's suggestion.
	long := filepath.Join(dir, "long.yaml")
	body = fmt.Sprintf(`name: long
seed: 4
rounds: 1000
prompts_per_round: 1
data: {tasks: [mod], rl_size: 12}
reward: {mode: entropy}
generation: {num_generations: 2, max_completion_length: 4}
optim: {learning_rate: 0.001}
eval: {size: 2, every: 1000}
checkpoint: {every: 250}
output_dir: %q
members:
  - {name: g, base: %q}
  - {name: l, base: %q, view: 1}
`, t.TempDir(), a, b)
	if err := os.WriteFile(long, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	run, err := cli.StartRun(ctx, cl, store, c.ns, cli.RunFlags{SpecFlags: cli.SpecFlags{File: long}, ID: "load-long"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	res := awaitResult(t, cl, run.GetID(), 40*time.Minute)
	took := time.Since(t0)
	if res.Rounds != 1000 {
		t.Errorf("long run ended after %d rounds, want 1000", res.Rounds)
	}
	runs, err := history.Runs(ctx, cl, "load-long")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1,000 rounds: %.1f s (%d ms a round), %d runs in its continue-as-new chain", took.Seconds(), took.Milliseconds()/1000, len(runs))
	if len(runs) < 2 {
		t.Errorf("the 1,000-round run never continued as new (%d run)", len(runs))
	}
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(workflows.CohortRun, workflow.RegisterOptions{Name: pipeline.CohortRunWorkflow})
	var lengths []string
	for i, events := range runs {
		if err := replayer.ReplayWorkflowHistory(nil, &historypb.History{Events: events}); err != nil {
			t.Errorf("run %d of %d of the chain does not replay: %v", i+1, len(runs), err)
		}
		lengths = append(lengths, fmt.Sprint(len(events)))
	}
	t.Logf("the chain's %d runs replay; their history lengths (events): %s", len(runs), strings.Join(lengths, ", "))
	completedOnce(t, cl, c.ns, []string{"load-long"})
	if _, err := store.Get(ctx, "runs/load-long/records/complete"); err != nil {
		t.Errorf("long run: records not complete in the store: %v", err)
	}
}

// completedOnce checks that each workflow ID has exactly one completed
// execution, every other execution of it having continued as new: no run
// lost, none completed twice.
func completedOnce(t *testing.T, cl client.Client, ns string, ids []string) {
	t.Helper()
	for _, id := range ids {
		// Visibility is rate-limited per namespace (10 a second by
		// default): wait out a refusal.
		var resp *workflowservice.ListWorkflowExecutionsResponse
		var err error
		for try := 0; ; try++ {
			resp, err = cl.WorkflowService().ListWorkflowExecutions(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: ns, Query: fmt.Sprintf("WorkflowId = %q", id)})
			var busy *serviceerror.ResourceExhausted
			if !errors.As(err, &busy) || try == 50 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		completed := 0
		for _, e := range resp.GetExecutions() {
			switch e.GetStatus() {
			case enums.WORKFLOW_EXECUTION_STATUS_COMPLETED:
				completed++
			case enums.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
			default:
				t.Errorf("%s: an execution %v", id, e.GetStatus())
			}
		}
		if completed != 1 {
			t.Errorf("%s: %d completed executions, want 1", id, completed)
		}
	}
}

// loadFigures logs the runs' activity schedule-to-start latency (each
// activity's started event time minus its scheduled event time, from the
// histories) and their history lengths and sizes.
func loadFigures(t *testing.T, cl client.Client, what string, ids []string) {
	t.Helper()
	ctx := context.Background()
	var lat []time.Duration
	var events, bytes []int64
	for _, id := range ids {
		runs, err := history.Runs(ctx, cl, id)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, evs := range runs {
			scheduled := map[int64]time.Time{}
			for _, e := range evs {
				if e.GetActivityTaskScheduledEventAttributes() != nil {
					scheduled[e.GetEventId()] = e.GetEventTime().AsTime()
				}
				if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
					if s, ok := scheduled[a.GetScheduledEventId()]; ok {
						lat = append(lat, e.GetEventTime().AsTime().Sub(s))
					}
				}
			}
			n += int64(len(evs))
		}
		events = append(events, n)
		d, err := cl.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		bytes = append(bytes, d.GetWorkflowExecutionInfo().GetHistorySizeBytes())
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	slices.Sort(events)
	slices.Sort(bytes)
	t.Logf("%s: %d activities, schedule-to-start p50 %v, p95 %v, max %v; history per run: %d-%d events, last run %d-%d bytes",
		what, len(lat), q(0.5).Round(time.Millisecond), q(0.95).Round(time.Millisecond), q(1).Round(time.Millisecond),
		events[0], events[len(events)-1], bytes[0], bytes[len(bytes)-1])
}
