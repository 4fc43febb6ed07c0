package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/corl-project/corl/stats"
	"github.com/corl-project/corl/workflows"
)

// flakyClient is a Temporal client whose first describe calls fail as an
// outage would; then the run has completed.
type flakyClient struct {
	client.Client
	failures []error
	missing  bool
}

func (c *flakyClient) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if c.missing {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	if len(c.failures) > 0 {
		err := c.failures[0]
		c.failures = c.failures[1:]
		return nil, err
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED}}, nil
}

func (c *flakyClient) GetWorkflow(context.Context, string, string) client.WorkflowRun {
	return doneRun{}
}

type doneRun struct{ client.WorkflowRun }

func (doneRun) Get(_ context.Context, v any) error {
	b, _ := json.Marshal(workflows.Result{Rounds: 4, Members: []string{"g", "l"}, Evals: []workflows.EvalSummary{{
		Round: 4, PassAt1: []float64{0.25, 0.5}, PassAt1CI: []stats.Interval{{Mean: 0.25, Lo: 0.2, Hi: 0.3}, {Mean: 0.5, Lo: 0.45, Hi: 0.55}},
		SampledPassAt1: []float64{0.125, 0.375}, MajAtK: []float64{0.25, 0.5}}}})
	return json.Unmarshal(b, v)
}

// TestWatchRidesOutOutages: short outages (unavailable, a timed-out query,
// a reset stream) are reported and retried; the run's result still comes.
// A run that does not exist ends the watch at once.
func TestWatchRidesOutOutages(t *testing.T) {
	cl := &flakyClient{failures: []error{
		serviceerror.NewUnavailable("connection refused"),
		serviceerror.NewDeadlineExceeded("context deadline exceeded"),
		serviceerror.NewCanceled("stream error: stream ID 5; CANCEL"),
	}}
	var out bytes.Buffer
	if err := Watch(context.Background(), cl, "r", &out, time.Millisecond); err != nil {
		t.Fatalf("watch gave up: %v\n%s", err, out.String())
	}
	if n := strings.Count(out.String(), "lost contact with Temporal"); n != 3 || !strings.Contains(out.String(), "completed 4 rounds") {
		t.Errorf("%d outages reported, output:\n%s", n, out.String())
	}
	// The last evaluation as a table, a row per member.
	if !regexp.MustCompile(`(?m)^l +0\.500 +\[0\.450, 0\.550\] +0\.375 +0\.500$`).MatchString(out.String()) {
		t.Errorf("no evaluation table row for member l:\n%s", out.String())
	}
	if err := Watch(context.Background(), &flakyClient{missing: true}, "r", &out, time.Millisecond); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("watching a missing run: %v", err)
	}
}

// TestRootCauseKeepsThePath: a run that failed on a missing base reports the
// activity's message with the path, not the bare errno at the bottom.
func TestRootCauseKeepsThePath(t *testing.T) {
	errno := temporal.NewNonRetryableApplicationError("no such file or directory", "Errno", nil)
	bad := temporal.NewNonRetryableApplicationError("member g: base /data/g: open /data/g/config.json: no such file or directory", "BadSpec", errno)
	got := rootCause(fmt.Errorf("workflow execution error: activity error: %w", bad))
	if !strings.Contains(got, "/data/g/config.json") || !strings.HasPrefix(got, "BadSpec") {
		t.Errorf("root cause %q", got)
	}
}

// TestLoadSweep: a sweep file's base is loaded like a run spec (relative to
// the file), the grid keeps the file's order, and a bad key or a bad cell
// is refused naming the file and the cell.
func TestLoadSweep(t *testing.T) {
	in, err := LoadSweep("../examples/sweep-lr.yaml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if in.Name != "gt-lr" || in.MaxParallel != 2 || in.Base.Rounds != 30 || in.Base.Reward.Mode != "ground-truth" {
		t.Errorf("sweep %+v", in)
	}
	var keys []string
	for _, ax := range in.Grid {
		keys = append(keys, ax.Key)
	}
	if strings.Join(keys, " ") != "optim.learning_rate prompts_per_round seed" {
		t.Errorf("grid order %v", keys)
	}
	dir := t.TempDir()
	// A method's member bases are found next to the sweep file.
	if err := os.MkdirAll(dir+"/zoo/m2", 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("../examples/ground-truth.yaml")
	body := "name: x\nbase: " + abs + "\ngrid:\n  method:\n    - {name: gt, reward.mode: ground-truth}\n" +
		"    - {name: pair, reward.mode: peer-ring, members: [{name: a, base: zoo/m2}, {name: b, base: zoo/m2, view: 1}]}\n  seed: [1, 2]\n"
	if err := os.WriteFile(dir+"/m.yaml", []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err = LoadSweep(dir+"/m.yaml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	specs, labels, err := workflows.Cells(*in)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 4 || labels[2] != "method=pair,seed=1" || len(specs[2].Members) != 2 || specs[2].Members[1].Base != filepath.Join(dir, "zoo/m2") || specs[2].Members[1].View != 1 {
		t.Errorf("method cells %v: %+v", labels, specs[2].Members)
	}
	for body, want := range map[string]string{
		"name: x\nbase: ../examples/ground-truth.yaml\ngrid:\n  optim.lr: [1]\n":              `"optim.lr" is not a run spec key`,
		"name: x\nbase: ../examples/ground-truth.yaml\ngrid:\n  optim.adam_beta2: [0.9, 0]\n": "cell 1 (optim.adam_beta2=0): optim.adam_beta2: 0 must be in (0, 1)",
		"name: x\nbase: ../examples/ground-truth.yaml\ngrdi: {}\n":                            "field grdi not found",
		"name: x\nbase: ../examples/ground-truth.yaml\ngrid: {}\n":                            "s.yaml:3: grid: empty: name at least one spec key",
	} {
		p := dir + "/s.yaml"
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadSweep(p, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}
