package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

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
	b, _ := json.Marshal(workflows.Result{Rounds: 4})
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
