package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/config"
	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/metrics"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/model/modeltest"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/spec"
)

func testSpec(t *testing.T) spec.RunSpec {
	file := filepath.Join(t.TempDir(), "run.yaml")
	body := fmt.Sprintf(`name: act
rounds: 3
prompts_per_round: 2
data: {tasks: [mod], rl_size: 6}
reward: {mode: entropy}
generation: {num_generations: 2, max_completion_length: 10}
optim: {learning_rate: 0.01}
eval: {size: 2}
members:
  - {name: g, base: %q}
  - {name: l, base: %q}
`, modeltest.Base(t, model.GPT2, 1), modeltest.Base(t, model.Llama, 2))
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := config.Load(file, func(string) string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return *s
}

// env runs activities like a worker would, with a shared Activities value.
type env struct {
	t   *testing.T
	a   *Activities
	env *testsuite.TestActivityEnvironment
}

func newEnv(t *testing.T) *env {
	var s testsuite.WorkflowTestSuite
	e := s.NewTestActivityEnvironment()
	a := New(blob.Local{Root: t.TempDir()}, cpu.New(2), "q-test")
	e.RegisterActivity(a)
	return &env{t: t, a: a, env: e}
}

func (e *env) run(fn any, in any, out any) error {
	v, err := e.env.ExecuteActivity(fn, in)
	if err != nil {
		return err
	}
	if out != nil {
		return v.Get(out)
	}
	return nil
}

// TestRoundThroughActivities: acquire, generate, grade, update, checkpoint,
// and the rules that keep retries honest.
func TestRoundThroughActivities(t *testing.T) {
	e := newEnv(t)
	s := testSpec(t)
	ref := func(m, r int) pipeline.MemberRef { return pipeline.MemberRef{Spec: s, Member: m, Round: r} }
	// Not held yet: a non-retryable MemberNotHere.
	var ae *temporal.ApplicationError
	if err := e.run(e.a.Generate, ref(0, 0), nil); !errors.As(err, &ae) || ae.Type() != pipeline.ErrMemberNotHere || !ae.NonRetryable() {
		t.Fatalf("generate before acquire: %v", err)
	}
	var keys []string
	for m := range s.Members {
		var acq pipeline.AcquireOutput
		if err := e.run(e.a.Acquire, pipeline.AcquireInput{MemberRef: ref(m, 0)}, &acq); err != nil {
			t.Fatal(err)
		}
		if acq.Queue != "q-test" || acq.Round != 0 {
			t.Fatalf("acquire: %+v", acq)
		}
		var g pipeline.GenerateOutput
		if err := e.run(e.a.Generate, ref(m, 0), &g); err != nil {
			t.Fatal(err)
		}
		if g.Key != blob.RolloutKey("act", 0, s.Members[m].Name) || g.Tokens == 0 {
			t.Fatalf("generate: %+v", g)
		}
		keys = append(keys, g.Key)
	}
	var grade pipeline.GradeOutput
	if err := e.run(e.a.Grade, pipeline.GradeInput{Spec: s, Round: 0, Rollouts: keys}, &grade); err != nil {
		t.Fatal(err)
	}
	if len(grade.Diag.Models) != 2 {
		t.Fatalf("grade: %+v", grade)
	}
	var u1, u2 pipeline.UpdateOutput
	if err := e.run(e.a.Update, ref(0, 0), &u1); err != nil {
		t.Fatal(err)
	}
	w1 := e.a.held[heldKey("act", "g")].member.Model.Params().Slice(0, 8)
	before := make([]float32, 8)
	e.a.Backend.Download(before, w1)
	// A retry of the same update returns the recorded result, weights untouched.
	if err := e.run(e.a.Update, ref(0, 0), &u2); err != nil {
		t.Fatal(err)
	}
	after := make([]float32, 8)
	e.a.Backend.Download(after, w1)
	if u1.Stats != u2.Stats || before[0] != after[0] || before[7] != after[7] {
		t.Fatalf("a retried update was applied again: %+v vs %+v", u1.Stats, u2.Stats)
	}
	// Generating round 0 again for a member now at round 1 is refused.
	if err := e.run(e.a.Generate, ref(0, 0), nil); !errors.As(err, &ae) || ae.Type() != pipeline.ErrMemberNotHere {
		t.Fatalf("stale generate: %v", err)
	}
	var key string
	if err := e.run(e.a.Checkpoint, ref(0, 1), &key); err != nil {
		t.Fatal(err)
	}
	// A fresh worker picks the member up from that checkpoint, at round 1,
	// with the same weights; from the base when asked for round 0 only.
	e2 := newEnv(t)
	e2.a.Store = e.a.Store
	var acq pipeline.AcquireOutput
	if err := e2.run(e2.a.Acquire, pipeline.AcquireInput{MemberRef: ref(0, 1)}, &acq); err != nil {
		t.Fatal(err)
	}
	if acq.Round != 1 || acq.CheckpointKey != key {
		t.Fatalf("acquire after a checkpoint: %+v (checkpoint %s)", acq, key)
	}
	moved := make([]float32, 8)
	e2.a.Backend.Download(moved, e2.a.held[heldKey("act", "g")].member.Model.Params().Slice(0, 8))
	if moved[3] != after[3] {
		t.Fatal("weights changed across the checkpoint")
	}
	// Replay of member 1's update from stored rollouts and grades.
	var reached int
	if err := e.run(e.a.Replay, pipeline.ReplayInput{MemberRef: ref(1, 0), From: 0, To: 1}, &reached); err != nil || reached != 1 {
		t.Fatalf("replay: %d, %v", reached, err)
	}
	var ev pipeline.EvalOutput
	if err := e.run(e.a.Evaluate, ref(1, 1), &ev); err != nil || len(ev.Correct) != 2 {
		t.Fatalf("evaluate: %+v, %v", ev, err)
	}
	// A bad spec is non-retryable.
	bad := s
	bad.Rounds = 0
	if err := e.run(e.a.Grade, pipeline.GradeInput{Spec: bad, Round: 0, Rollouts: keys}, nil); !errors.As(err, &ae) || ae.Type() != pipeline.ErrBadSpec {
		t.Fatalf("bad spec: %v", err)
	}
}

// noHalfKV is a backend without the binary16 cache or bfloat16 weights (as
// the CUDA one).
type noHalfKV struct{ gpu.Backend }

// TestHalfCacheGenerates: generation.kv_cache f16 and generation.weights
// bf16 generate on the CPU backend; on a backend without binary16
// attention or bfloat16 weights Generate refuses them as a bad spec (not
// retried), naming the key.
func TestHalfCacheGenerates(t *testing.T) {
	for _, c := range []struct {
		key string
		set func(*spec.RunSpec)
	}{
		{"generation.kv_cache", func(s *spec.RunSpec) { s.Generation.KVCache = "f16" }},
		{"generation.weights", func(s *spec.RunSpec) { s.Generation.Weights = "bf16" }},
	} {
		s := testSpec(t)
		c.set(&s)
		ref := pipeline.MemberRef{Spec: s, Member: 1}
		for _, be := range []gpu.Backend{cpu.New(2), noHalfKV{cpu.New(2)}} {
			var st testsuite.WorkflowTestSuite
			e := &env{t: t, a: New(blob.Local{Root: t.TempDir()}, be, "q-test"), env: st.NewTestActivityEnvironment()}
			e.env.RegisterActivity(e.a)
			if err := e.run(e.a.Acquire, pipeline.AcquireInput{MemberRef: ref}, nil); err != nil {
				t.Fatal(err)
			}
			var g pipeline.GenerateOutput
			err := e.run(e.a.Generate, ref, &g)
			if _, ok := be.(gpu.HalfKV); ok {
				if err != nil || g.Tokens == 0 {
					t.Fatalf("%s on the CPU backend: %+v, %v", c.key, g, err)
				}
				continue
			}
			var ae *temporal.ApplicationError
			if !errors.As(err, &ae) || ae.Type() != pipeline.ErrBadSpec || !ae.NonRetryable() || !strings.Contains(err.Error(), c.key) {
				t.Fatalf("%s on a backend without it: %v", c.key, err)
			}
		}
	}
}

// TestNonFiniteUpdateDropsTheMember: an update whose loss or weights go
// non-finite fails non-retryably naming member and round, and the worker
// forgets the member, so no checkpoint (a stop notice's included) writes
// the poisoned weights.
func TestNonFiniteUpdateDropsTheMember(t *testing.T) {
	e, ref := gradedRoundZero(t)
	poison := e.a.held[heldKey("act", "l")].member.Model.Params()
	nan := []float32{float32(math.NaN())}
	e.a.Backend.Upload(poison.Slice(0, 1), nan)
	err := e.run(e.a.Update, ref(1, 0), nil)
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != pipeline.ErrNonFinite || !ae.NonRetryable() || !strings.Contains(err.Error(), "model l, round 0") {
		t.Fatalf("update with NaN weights: %v", err)
	}
	if _, ok := e.a.held[heldKey("act", "l")]; ok {
		t.Fatal("the worker still holds the poisoned member")
	}
	if errs := CheckpointAll(context.Background(), e.a); len(errs) != 0 {
		t.Fatal(errs)
	}
	if _, err := e.a.Store.Get(context.Background(), blob.ManifestKey(blob.CheckpointPrefix("act", 0, "l"))); err == nil {
		t.Fatal("a stop-notice checkpoint wrote the poisoned member")
	}
}

// TestCorruptCheckpointFallsBack: a checkpoint whose object no longer
// matches its manifest is not retried for ever: Acquire restores the newest
// older checkpoint (here the base) and says so.
func TestCorruptCheckpointFallsBack(t *testing.T) {
	e, ref := gradedRoundZero(t)
	if err := e.run(e.a.Update, ref(0, 0), nil); err != nil {
		t.Fatal(err)
	}
	var key string
	if err := e.run(e.a.Checkpoint, ref(0, 1), &key); err != nil {
		t.Fatal(err)
	}
	obj := strings.TrimSuffix(key, "manifest.json") + "model.safetensors"
	b, err := e.a.Store.Get(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := e.a.Store.Put(context.Background(), obj, b); err != nil {
		t.Fatal(err)
	}
	e2 := newEnv(t)
	e2.a.Store = e.a.Store
	var acq pipeline.AcquireOutput
	if err := e2.run(e2.a.Acquire, pipeline.AcquireInput{MemberRef: ref(0, 1), CheckpointKey: key, CheckpointRound: 1}, &acq); err != nil {
		t.Fatalf("acquire with a corrupt checkpoint: %v", err)
	}
	if acq.Round != 0 || acq.CheckpointKey != "" || !strings.Contains(acq.Note, "corrupt") || !strings.Contains(acq.Note, "model.safetensors") {
		t.Fatalf("acquire: %+v, want the base and a note naming the corrupt object", acq)
	}
}

// TestRunsWithOneNameAreSeparate: two live workflows of one spec name (a
// schedule firing while the last run goes on) hold their own copies of a
// member on a worker and write their own blob keys.
func TestRunsWithOneNameAreSeparate(t *testing.T) {
	e := newEnv(t)
	s := testSpec(t)
	for _, run := range []string{"wf-1", "wf-2"} {
		ref := pipeline.MemberRef{Spec: s, Member: 0, Round: 0, Run: run}
		if err := e.run(e.a.Acquire, pipeline.AcquireInput{MemberRef: ref}, nil); err != nil {
			t.Fatal(err)
		}
		var g pipeline.GenerateOutput
		if err := e.run(e.a.Generate, ref, &g); err != nil {
			t.Fatal(err)
		}
		if g.Key != blob.RolloutKey(run, 0, "g") {
			t.Errorf("run %s wrote %s", run, g.Key)
		}
	}
	if len(e.a.held) != 2 {
		t.Errorf("worker holds %d members, want one per run", len(e.a.held))
	}
	// The first run ends: its member is released, the other run's stays.
	ended := pipeline.MemberRef{Spec: s, Member: 0, Round: 0, Run: "wf-1"}
	if err := e.run(e.a.Release, ended, nil); err != nil {
		t.Fatal(err)
	}
	var ae *temporal.ApplicationError
	if err := e.run(e.a.Generate, ended, nil); !errors.As(err, &ae) || ae.Type() != pipeline.ErrMemberNotHere {
		t.Errorf("generate after release: %v, want MemberNotHere", err)
	}
	if len(e.a.held) != 1 {
		t.Errorf("worker holds %d members after one run ended, want 1", len(e.a.held))
	}
}

// gradedRoundZero places both members of the test spec on a worker,
// generates their round-0 rollouts and grades them: what an update needs.
func gradedRoundZero(t *testing.T) (*env, func(m, r int) pipeline.MemberRef) {
	t.Helper()
	e := newEnv(t)
	s := testSpec(t)
	ref := func(m, r int) pipeline.MemberRef { return pipeline.MemberRef{Spec: s, Member: m, Round: r} }
	var keys []string
	for m := range s.Members {
		if err := e.run(e.a.Acquire, pipeline.AcquireInput{MemberRef: ref(m, 0)}, nil); err != nil {
			t.Fatal(err)
		}
		var g pipeline.GenerateOutput
		if err := e.run(e.a.Generate, ref(m, 0), &g); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, g.Key)
	}
	if err := e.run(e.a.Grade, pipeline.GradeInput{Spec: s, Round: 0, Rollouts: keys}, nil); err != nil {
		t.Fatal(err)
	}
	return e, ref
}

// TestActivitiesRecordMetrics: a worker with metrics on records placements,
// generation, grading and the update per member.
func TestActivitiesRecordMetrics(t *testing.T) {
	reg := metrics.New()
	e, ref := gradedRoundZero(t)
	e.a.Metrics = reg.Corl
	if err := e.run(e.a.Update, ref(0, 0), nil); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, w := range []string{`corl_stage_seconds_count{member="g",run="act",stage="update"} 1`, `corl_tokens_total{kind="trained",member="g",run="act"}`} {
		if !strings.Contains(body, w) {
			t.Errorf("metrics lack %s", w)
		}
	}
}

// TestAcquireWithinSlots: a placement within slots is refused, non-
// retryably, by a worker that holds its slots' worth of other members, and
// taken beyond them when asked to share; a member this worker already holds
// does not count against itself.
func TestAcquireWithinSlots(t *testing.T) {
	e := newEnv(t)
	e.a.Slots = 1
	s := testSpec(t)
	in := func(member int, within bool) pipeline.AcquireInput {
		return pipeline.AcquireInput{MemberRef: pipeline.MemberRef{Spec: s, Member: member, Run: "r"}, WithinSlots: within}
	}
	if err := e.run(e.a.Acquire, in(0, true), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.run(e.a.Acquire, in(0, true), nil); err != nil {
		t.Errorf("placing a held member again within slots: %v", err)
	}
	var ae *temporal.ApplicationError
	if err := e.run(e.a.Acquire, in(1, true), nil); !errors.As(err, &ae) || ae.Type() != pipeline.ErrWorkerFull || !ae.NonRetryable() {
		t.Fatalf("a second member within one slot: %v, want a non-retryable %s", err, pipeline.ErrWorkerFull)
	}
	if err := e.run(e.a.Acquire, in(1, false), nil); err != nil {
		t.Errorf("a second member sharing: %v", err)
	}
}

// TestEvaluateReusesAStoredResult: a second run from the same base reads the
// base's evaluation back instead of recomputing it; the stored result is the
// computed one; changed weights are evaluated afresh.
func TestEvaluateReusesAStoredResult(t *testing.T) {
	e := newEnv(t)
	s := testSpec(t)
	s.Eval.Samples = 2
	other := s
	other.Name = "act-2"
	ref := func(s spec.RunSpec, r int) pipeline.MemberRef {
		return pipeline.MemberRef{Spec: s, Member: 1, Round: r}
	}
	for _, sp := range []spec.RunSpec{s, other} {
		if err := e.run(e.a.Acquire, pipeline.AcquireInput{MemberRef: ref(sp, 0)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var first pipeline.EvalOutput
	if err := e.run(e.a.Evaluate, ref(s, 0), &first); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.a.Store.(blob.Local).Root, "cache", "eval")
	stored, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(stored) != 1 {
		t.Fatalf("stored evaluations: %v", stored)
	}
	// Reused: a marked copy of the stored result is what the other run gets.
	b, err := os.ReadFile(stored[0])
	if err != nil {
		t.Fatal(err)
	}
	marked := strings.Replace(string(b), `"pass_at_1":`, `"pass_at_1":0.125,"x":`, 1)
	if err := os.WriteFile(stored[0], []byte(marked), 0o644); err != nil {
		t.Fatal(err)
	}
	var second pipeline.EvalOutput
	if err := e.run(e.a.Evaluate, ref(other, 0), &second); err != nil {
		t.Fatal(err)
	}
	if second.PassAt1 != 0.125 {
		t.Fatalf("second run's base evaluation was recomputed, not reused: %v", second.PassAt1)
	}
	// Stored = computed: without the stored copy the evaluation recomputes
	// to the same result, field for field.
	if err := os.Remove(stored[0]); err != nil {
		t.Fatal(err)
	}
	var again pipeline.EvalOutput
	if err := e.run(e.a.Evaluate, ref(other, 0), &again); err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, again), mustJSON(t, first); a != b {
		t.Fatalf("recomputed evaluation differs:\n%s\n%s", a, b)
	}
	// One weight changed: another key, computed afresh.
	m := e.a.held[heldKey("act", "l")].member.Model
	w := make([]float32, 1)
	e.a.Backend.Download(w, m.Params().Slice(0, 1))
	e.a.Backend.Upload(m.Params().Slice(0, 1), []float32{w[0] + 1e-3})
	if err := e.run(e.a.Evaluate, ref(s, 0), nil); err != nil {
		t.Fatal(err)
	}
	if stored, _ = filepath.Glob(filepath.Join(dir, "*.json")); len(stored) != 2 {
		t.Fatalf("after a weight change, stored evaluations: %d, want 2", len(stored))
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAcquireErrorsNameTheUsersDirectory: a base uploaded to the store (as
// corl run does) that fails to load is named by the directory it came from,
// never by the worker's temporary copy.
func TestAcquireErrorsNameTheUsersDirectory(t *testing.T) {
	e := newEnv(t)
	s := testSpec(t)
	dir := filepath.Join(t.TempDir(), "my-base")
	if err := os.CopyFS(dir, os.DirFS(s.Members[0].Base)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	key, err := blob.UploadDir(context.Background(), e.a.Store, dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Members[0].Base = blob.BlobRef + key
	err = e.run(e.a.Acquire, pipeline.AcquireInput{MemberRef: pipeline.MemberRef{Spec: s, Member: 0, Run: "r"}}, nil)
	if err == nil || !strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), "corl-model-") {
		t.Fatalf("acquire of a broken uploaded base: %v\nwant it to name %s, not the temporary copy", err, dir)
	}
	t.Logf("reported: %v", err)
}

// fakeServer answers the two questions workers ask the Temporal server:
// a run's status and the pool queue's pollers.
type fakeServer struct {
	client.Client
	status  map[string]enumspb.WorkflowExecutionStatus   // the ID's newest run; absent: not found
	first   map[string]string                            // the first run ID of the ID's newest run's chain
	runs    map[string]*workflowpb.WorkflowExecutionInfo // by "ID/run ID": one execution asked for by its run ID
	down    bool                                         // every call fails as unreachable
	pollers []string
}

func (f *fakeServer) DescribeWorkflowExecution(_ context.Context, id, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if f.down {
		return nil, serviceerror.NewUnavailable("connection refused")
	}
	if info, ok := f.runs[id+"/"+runID]; ok && runID != "" {
		return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: info}, nil
	}
	st, ok := f.status[id]
	if !ok {
		return nil, serviceerror.NewNotFound("workflow not found for ID: " + id)
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: st, FirstRunId: f.first[id]}}, nil
}

func (f *fakeServer) DescribeTaskQueue(context.Context, string, enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	resp := &workflowservice.DescribeTaskQueueResponse{}
	for _, id := range f.pollers {
		resp.Pollers = append(resp.Pollers, &taskqueuepb.PollerInfo{Identity: id, LastAccessTime: timestamppb.Now()})
	}
	return resp, nil
}

// TestClosedRunsAreReclaimed: members of runs that ended in any way that
// runs no release (terminated, timed out) or whose release did not arrive
// are forgotten at the next placement or idle check; members of open runs
// (one continued as new included) and of runs the server cannot be asked
// about are kept. The freed slot takes the next run's member.
func TestClosedRunsAreReclaimed(t *testing.T) {
	e := newEnv(t)
	srv := &fakeServer{status: map[string]enumspb.WorkflowExecutionStatus{
		"completed":  enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
		"failed":     enumspb.WORKFLOW_EXECUTION_STATUS_FAILED,
		"cancelled":  enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED,
		"terminated": enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
		"timed-out":  enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT,
		"continued":  enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, // the ID's newest run
		"running":    enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		"next":       enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
	}}
	e.a.Client, e.a.Metrics = srv, metrics.New().Corl
	s := testSpec(t)
	runs := []string{"completed", "failed", "cancelled", "terminated", "timed-out", "continued", "running", "unknown"}
	for _, run := range runs {
		if err := e.run(e.a.Acquire, pipeline.AcquireInput{MemberRef: pipeline.MemberRef{Spec: s, Member: 0, Run: run}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := Held(e.a); n != 3 {
		// Each placement reclaimed the closed runs before it.
		t.Fatalf("after 8 placements the worker holds %d members, want the 2 of open runs and the last one's", n)
	}
	srv.down = true
	srv.status["running"] = enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	if n := ReclaimClosed(context.Background(), e.a); n != 0 || Held(e.a) != 3 {
		t.Errorf("with the server unreachable %d members were forgotten (%d held); want none", n, Held(e.a))
	}
	srv.down = false
	if n := ReclaimClosed(context.Background(), e.a); n != 2 {
		t.Errorf("ReclaimClosed forgot %d members, want those of the run that completed and of the one the server does not know", n)
	}
	if got := testutil.ToFloat64(e.a.Metrics.Held); got != 1 {
		t.Errorf("corl_members_held = %v, want 1", got)
	}
	// One slot, taken by the open run's member: a dead run's member in it
	// would have made this placement fail with ErrWorkerFull.
	e.a.Slots = 1
	srv.status["continued"] = enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED
	if err := e.run(e.a.Acquire, pipeline.AcquireInput{MemberRef: pipeline.MemberRef{Spec: s, Member: 1, Run: "next"}, WithinSlots: true}, nil); err != nil {
		t.Errorf("placement beside a terminated run's member: %v", err)
	}
}

// TestARunStartedAgainDoesNotInheritMembers: a run started again under the
// workflow ID of one that was terminated (corl run's default ID is the
// spec's name) is another run: the terminated run's members are reclaimed
// at the new run's placement, not kept as the new run's and counted
// against the worker's slots. A run that continued as new keeps its
// members; once its chain has ended and a new chain holds the ID, they go.
func TestARunStartedAgainDoesNotInheritMembers(t *testing.T) {
	e := newEnv(t)
	// The activity environment's execution: the run that places member 0.
	const id, run1 = "default-test-workflow-id", "default-test-run-id"
	running, terminated := enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED
	srv := &fakeServer{status: map[string]enumspb.WorkflowExecutionStatus{id: running}, first: map[string]string{id: run1},
		runs: map[string]*workflowpb.WorkflowExecutionInfo{id + "/" + run1: {Status: running, FirstRunId: run1}}}
	e.a.Client, e.a.Metrics, e.a.Slots = srv, metrics.New().Corl, 1
	s := testSpec(t)
	acquire := func(member int) error {
		return e.run(e.a.Acquire, pipeline.AcquireInput{MemberRef: pipeline.MemberRef{Spec: s, Member: member, Run: id}, WithinSlots: true}, nil)
	}
	if err := acquire(0); err != nil {
		t.Fatal(err)
	}
	// Continued as new: the ID's newest run is of the same chain.
	srv.runs[id+"/"+run1].Status = enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
	if n := ReclaimClosed(context.Background(), e.a); n != 0 || Held(e.a) != 1 {
		t.Fatalf("a run that continued as new lost %d members (%d held)", n, Held(e.a))
	}
	// Terminated, and the same ID started again as a new chain.
	srv.runs[id+"/"+run1].Status, srv.first[id] = terminated, "run-2"
	if err := acquire(1); err != nil {
		t.Fatalf("the new run's placement within one slot: %v\n(the terminated run's member was counted as held)", err)
	}
	if n := Held(e.a); n != 1 {
		t.Errorf("worker holds %d members, want the new run's one", n)
	}
	// What corl status shows of the worker.
	b, err := e.a.Store.Get(context.Background(), pipeline.HoldingKey("q-test"))
	if err != nil {
		t.Fatal(err)
	}
	var h pipeline.Holding
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	want := []pipeline.HeldMember{{Run: id, Member: s.Members[1].Name}}
	if h.Queue != "q-test" || h.Slots != 1 || !reflect.DeepEqual(h.Members, want) {
		t.Errorf("recorded holding %+v, want queue q-test, 1 slot, members %v", h, want)
	}
}

// poolListing is the pool's workers as a's Workers lists them, as text.
func poolListing(t *testing.T, a *Activities) string {
	t.Helper()
	ws, err := a.Workers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(ws)
}

// TestAWorkerThatLeftIsNotListed: a worker that recorded leaving the pool
// is left out of the pool's workers at once, though the server still lists
// its poller; a new process on the same queue is listed again.
func TestAWorkerThatLeftIsNotListed(t *testing.T) {
	e := newEnv(t)
	w1, w2 := pipeline.PoolIdentity(pipeline.GPUPool+"-w1", 1), pipeline.PoolIdentity(pipeline.GPUPool+"-w2", 2)
	srv := &fakeServer{pollers: []string{w1, w2}}
	e.a.Client = srv
	list := func() string { return poolListing(t, e.a) }
	if got := list(); got != "[{corl-gpu-w1 1} {corl-gpu-w2 2}]" {
		t.Fatalf("pool %s", got)
	}
	leaving := New(e.a.Store, nil, pipeline.GPUPool+"-w1")
	if err := Leave(context.Background(), leaving, w1); err != nil {
		t.Fatal(err)
	}
	if got := list(); got != "[{corl-gpu-w2 2}]" {
		t.Errorf("after w1 left the pool is %s", got)
	}
	srv.pollers = append(srv.pollers, pipeline.PoolIdentity(pipeline.GPUPool+"-w1", 1)) // restarted with the same queue
	if got := list(); got != "[{corl-gpu-w1 1} {corl-gpu-w2 2}]" {
		t.Errorf("after w1 restarted the pool is %s", got)
	}
}

// TestAWorkerSilentPastAliveForIsNotListed: a worker whose record that it
// is alive is older than pipeline.AliveFor (killed idle: the server still
// lists its poller for PollerMemory) is left out; one that beats, one that
// never wrote a record (an older worker, or a store it cannot write), and
// a new process on the stale worker's queue are listed.
func TestAWorkerSilentPastAliveForIsNotListed(t *testing.T) {
	e := newEnv(t)
	w1, w2, w3 := pipeline.PoolIdentity(pipeline.GPUPool+"-w1", 1), pipeline.PoolIdentity(pipeline.GPUPool+"-w2", 1), pipeline.PoolIdentity(pipeline.GPUPool+"-w3", 1)
	srv := &fakeServer{pollers: []string{w1, w2, w3}}
	e.a.Client = srv
	list := func() string { return poolListing(t, e.a) }
	for q, id := range map[string]string{"w1": w1, "w2": w2} {
		if err := Beat(context.Background(), New(e.a.Store, nil, pipeline.GPUPool+"-"+q), id); err != nil {
			t.Fatal(err)
		}
	}
	if got := list(); got != "[{corl-gpu-w1 1} {corl-gpu-w2 1} {corl-gpu-w3 1}]" {
		t.Fatalf("pool %s", got)
	}
	stale, _ := json.Marshal(pipeline.Alive{Identity: w1, At: time.Now().Add(-pipeline.AliveFor - time.Second)})
	if err := e.a.Store.Put(context.Background(), pipeline.AliveKey(pipeline.GPUPool+"-w1"), stale); err != nil {
		t.Fatal(err)
	}
	if got := list(); got != "[{corl-gpu-w2 1} {corl-gpu-w3 1}]" {
		t.Errorf("with w1 silent for longer than %s the pool is %s", pipeline.AliveFor, got)
	}
	srv.pollers = append(srv.pollers, pipeline.PoolIdentity(pipeline.GPUPool+"-w1", 1)) // restarted with the same queue
	if got := list(); got != "[{corl-gpu-w1 1} {corl-gpu-w2 1} {corl-gpu-w3 1}]" {
		t.Errorf("after w1 restarted the pool is %s", got)
	}
}

// TestGradeWithAChecker: a spec naming a checker has Grade key the answers
// with it (a checker that keys every response alike makes every vote
// label its prompt, so every sample earns the peer's label); the verdicts
// are stored under the hash of their input, and a retried grade reads
// them instead of running the program again (here a program that now
// fails); a checker that crashes fails the grade without a retry, naming
// the program.
func TestGradeWithAChecker(t *testing.T) {
	e := newEnv(t)
	s := testSpec(t)
	s.Reward.Mode = "peer-ring"
	dir := t.TempDir()
	for _, p := range []string{filepath.Dir(dir), dir} {
		os.Chmod(p, 0o755)
	}
	prog := filepath.Join(dir, "same.sh")
	write := func(body string) {
		if err := os.WriteFile(prog, []byte("#!/bin/bash\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("while read -r line; do echo '{\"answer_key\": \"same\"}'; done\n")
	s.Data.Checker = spec.Checker{Command: []string{prog}}
	if err := config.Validate(&s); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for m := range s.Members {
		ref := pipeline.MemberRef{Spec: s, Member: m}
		if err := e.run(e.a.Acquire, pipeline.AcquireInput{MemberRef: ref}, nil); err != nil {
			t.Fatal(err)
		}
		var g pipeline.GenerateOutput
		if err := e.run(e.a.Generate, ref, &g); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, g.Key)
	}
	var grade pipeline.GradeOutput
	if err := e.run(e.a.Grade, pipeline.GradeInput{Spec: s, Round: 0, Rollouts: keys}, &grade); err != nil {
		t.Fatal(err)
	}
	for _, md := range grade.Diag.Models {
		if md.LabeledFrac != 1 || md.RewardMean != 1 {
			t.Fatalf("with every answer keyed alike: %+v", md)
		}
	}
	objs, err := e.a.Store.(blob.Local).List(context.Background(), "runs/act/round-00000/")
	if err != nil {
		t.Fatal(err)
	}
	cached := 0
	for _, o := range objs {
		if strings.Contains(o.Key, "/check-") {
			cached++
		}
	}
	if cached != 1 {
		t.Fatalf("%d stored verdict sets: %+v", cached, objs)
	}
	write("echo broken >&2; exit 3\n")
	var again pipeline.GradeOutput
	if err := e.run(e.a.Grade, pipeline.GradeInput{Spec: s, Round: 0, Rollouts: keys}, &again); err != nil {
		t.Fatalf("a retried grade ran the checker again: %v", err)
	}
	if again.Diag.Models[0].RewardMean != 1 {
		t.Fatalf("retried grade: %+v", again.Diag.Models[0])
	}
	s.Reward.Mode = "ground-truth" // rows with labels: no stored verdicts
	var ae *temporal.ApplicationError
	err = e.run(e.a.Grade, pipeline.GradeInput{Spec: s, Round: 0, Rollouts: keys}, nil)
	if !errors.As(err, &ae) || ae.Type() != pipeline.ErrChecker || !ae.NonRetryable() || !strings.Contains(err.Error(), prog) || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("a crashing checker: %v", err)
	}
}

// The workflow names activities by pipeline's constants; each must be one
// the workers register: a method of Activities, or ValidateSpec.
func TestPipelineNamesAreActivities(t *testing.T) {
	names := []string{pipeline.Acquire, pipeline.Workers, pipeline.Generate, pipeline.Judge, pipeline.Grade, pipeline.Update,
		pipeline.Replay, pipeline.Release, pipeline.Checkpoint, pipeline.Evaluate, pipeline.RunResult}
	typ := reflect.TypeOf(&Activities{})
	for _, n := range names {
		if _, ok := typ.MethodByName(n); !ok {
			t.Errorf("pipeline names %q, which is not a method of Activities", n)
		}
	}
	if n := runtime.FuncForPC(reflect.ValueOf(ValidateSpec).Pointer()).Name(); !strings.HasSuffix(n, "."+pipeline.ValidateSpec) {
		t.Errorf("ValidateSpec is %s, registered as %q", n, pipeline.ValidateSpec)
	}
}

// TestJudgeBlobReadsBothFormats: a judge blob carries its scoring cost; the
// bare scores stored by earlier versions still read, at no cost.
func TestJudgeBlobReadsBothFormats(t *testing.T) {
	b, _ := json.Marshal(judgeBlob{Scores: [][]float64{{0.5, 0.25}}, FLOPs: 12})
	jb, err := readJudgeBlob(b)
	if err != nil || jb.FLOPs != 12 || jb.Scores[0][1] != 0.25 {
		t.Fatalf("%+v, %v", jb, err)
	}
	jb, err = readJudgeBlob([]byte(`[[0.5, 0.75]]`))
	if err != nil || jb.FLOPs != 0 || jb.Scores[0][1] != 0.75 {
		t.Fatalf("bare scores: %+v, %v", jb, err)
	}
	if _, err := readJudgeBlob([]byte(`{"oops": 1}`)); err == nil {
		t.Fatal("a blob without scores was read")
	}
}
