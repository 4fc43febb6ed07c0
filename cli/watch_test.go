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
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/connect"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/model/modeltest"
	"github.com/corl-project/corl/pipeline"
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

// TestStatusSaysWhatItWaitsFor: status names each activity the run waits
// for, since when, and whether the worker it waits on was live in the
// pool's latest listing.
func TestStatusSaysWhatItWaitsFor(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p := &workflows.Progress{Waits: []workflows.Wait{
		{Member: "g", Activity: "generate", Queue: "corl-gpu-dev", Since: now.Add(-95 * time.Second)},
		{Member: "l", Activity: "generate", Queue: "corl-gpu-gone", Since: now.Add(-95 * time.Second)},
		{Activity: "grade", Queue: "corl-cpu", Since: now.Add(-3 * time.Second)},
	}, Pool: &workflows.PoolView{At: now.Add(-10 * time.Second), Queues: []string{"corl-gpu-dev"}}}
	var out bytes.Buffer
	printWaits(&out, p, now)
	want := `waiting 1m35s for generate of g on corl-gpu-dev (worker live in the pool 10s ago)
waiting 1m35s for generate of l on corl-gpu-gone (worker not in the pool 10s ago: moving the member)
waiting 3s for grade on corl-cpu (any CPU worker)
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestGCDeletesInterruptedCheckpoints: corl gc removes an old interrupted
// checkpoint's objects and a killed writer's temporary file, keeps a
// complete checkpoint, and --dry-run deletes nothing.
func TestGCDeletesInterruptedCheckpoints(t *testing.T) {
	dir := t.TempDir()
	store := blob.Local{Root: dir}
	ctx := context.Background()
	done, err := blob.WriteCheckpoint(ctx, store, blob.CheckpointPrefix("r", 2, "m"), map[string][]byte{"model.safetensors": []byte("w")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	half := blob.CheckpointPrefix("r", 4, "m") + "/model.safetensors"
	if err := store.Put(ctx, half, []byte("half")); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, blob.TempDir, ".model.safetensors.tmp1")
	if err := os.WriteFile(tmp, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, p := range []string{filepath.Join(dir, filepath.FromSlash(half)), tmp} {
		os.Chtimes(p, old, old)
	}
	code, out, errOut := run(t, "gc", "--store-dir", dir, "--dry-run")
	if code != 0 || !strings.Contains(out, "would delete 1 orphaned checkpoint objects and 1 temporary files") {
		t.Fatalf("dry run: %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatal("the dry run deleted")
	}
	code, out, errOut = run(t, "gc", "--store-dir", dir)
	if code != 0 || !strings.Contains(out, "deleted 1 orphaned checkpoint objects and 1 temporary files") {
		t.Fatalf("gc: %d\n%s%s", code, out, errOut)
	}
	if _, err := store.Get(ctx, half); err == nil {
		t.Error("the interrupted checkpoint's object is still there")
	}
	if _, _, err := blob.ReadCheckpoint(ctx, store, done); err != nil {
		t.Errorf("the complete checkpoint: %v", err)
	}
	if code, _, errOut := run(t, "gc", "--store-dir", dir, "--older-than", "-1h"); code == 0 || !strings.Contains(errOut, "--older-than") {
		t.Errorf("a negative --older-than: %d %s", code, errOut)
	}
}

// TestEvalAndGenerateRefuseCorruptWeights: a checkpoint whose
// model.safetensors changed after corl wrote its checksums is refused by
// eval and generate, naming the file, rather than scored.
func TestEvalAndGenerateRefuseCorruptWeights(t *testing.T) {
	dir := modeltest.Base(t, model.Llama, 1)
	if err := model.WriteChecksums(dir); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "model.safetensors")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0x40 // the top exponent bit of the last weight
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"eval", "--model", dir, "--tasks", "mod", "--n", "2", "--max-new-tokens", "4"},
		{"generate", "--model", dir, "--prompt", "hi", "--max-new-tokens", "2"},
	} {
		code, _, errs := run(t, args...)
		if code == 0 || !strings.Contains(errs, p+" does not match its checksum") {
			t.Errorf("corl %s on a flipped bit: exit %d, stderr %q", args[0], code, errs)
		}
	}
}

// TestEvalSignalCheck: corl eval with samples prints the signal check and,
// for a random model that no RL could improve, the warning with what to
// try; with --compare, each model under the other's vote.
func TestEvalSignalCheck(t *testing.T) {
	a, b := modeltest.Base(t, model.Llama, 1), modeltest.Base(t, model.GPT2, 2)
	code, out, errs := run(t, "eval", "--model", a, "--tasks", "mod", "--n", "4", "--max-new-tokens", "4", "--samples", "3", "--compare", b)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"signal check, 3 samples per problem", "ground truth    0% of problems have samples both right and wrong",
		"warning: only 0% of problems", a + " labelled by " + b + ":", "peer vote"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, out, _ = run(t, "eval", "--model", a, "--tasks", "mod", "--n", "2", "--max-new-tokens", "2"); !strings.Contains(out, "signal check: add --samples") {
		t.Errorf("without samples: %s", out)
	}
}

// TestEvalWithAChecker: corl eval --checker judges every response with the
// user's program: a checker that keys every response alike makes the own
// vote label every problem (the signal check shows it), and one that calls
// every response right scores pass@1 1; a checker that cannot be found is
// refused before any evaluation.
func TestEvalWithAChecker(t *testing.T) {
	a := modeltest.Base(t, model.Llama, 1)
	dir := t.TempDir()
	for _, p := range []string{filepath.Dir(dir), dir} {
		os.Chmod(p, 0o755)
	}
	prog := filepath.Join(dir, "all-right.sh")
	body := "#!/bin/bash\nwhile read -r line; do echo '{\"answer_key\": \"same\", \"correct\": true}'; done\n"
	if err := os.WriteFile(prog, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "eval", "--model", a, "--tasks", "mod", "--n", "3", "--max-new-tokens", "4", "--samples", "2", "--checker", prog)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{": pass@1 1.000", "own vote      labels 100% of problems"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := run(t, "eval", "--model", a, "--tasks", "mod", "--checker", "no-such-checker-program"); code == 0 || !strings.Contains(errs, "--checker") {
		t.Errorf("a missing checker: exit %d, %s", code, errs)
	}
}

// poolClient lists the pool queue's pollers as a server would.
type poolClient struct {
	client.Client
	identities []string
}

func (c poolClient) DescribeTaskQueue(context.Context, string, enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	resp := &workflowservice.DescribeTaskQueueResponse{}
	for _, id := range c.identities {
		resp.Pollers = append(resp.Pollers, &taskqueuepb.PollerInfo{Identity: id, LastAccessTime: timestamppb.Now()})
	}
	return resp, nil
}

// TestStatusShowsWhatEachWorkerHolds: status lists the live GPU workers
// with the members each recorded holding, of every run, and names a worker
// whose slots are taken (a member of a dead run held there is what turns
// a placement away); a worker with no record says so.
func TestStatusShowsWhatEachWorkerHolds(t *testing.T) {
	dir := t.TempDir()
	store := blob.Local{Root: dir}
	full, fresh := pipeline.GPUPool+"-a", pipeline.GPUPool+"-b"
	h, _ := json.Marshal(pipeline.Holding{Queue: full, Slots: 1, Members: []pipeline.HeldMember{{Run: "corl-old", Member: "g"}, {Run: "corl-new", Member: "l"}}})
	if err := store.Put(context.Background(), pipeline.HoldingKey(full), h); err != nil {
		t.Fatal(err)
	}
	conn := &connect.Connection{}
	conn.Store.Kind, conn.Store.Local = "local", dir
	var out bytes.Buffer
	printPool(context.Background(), &out, poolClient{identities: []string{pipeline.PoolIdentity(full, 1), pipeline.PoolIdentity(fresh, 2)}}, conn, "corl-new")
	for _, want := range []string{
		full + "  1      2     corl-old/g, corl-new/l",
		fresh + "  2      -     (not recorded)",
		"worker " + full + " holds 2 members in 1 slots, 1 of other runs: it takes this run's next member only when every worker is full",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status shows\n%s\nwant a line with %q", out.String(), want)
		}
	}
	t.Logf("status shows\n%s", out.String())
}
