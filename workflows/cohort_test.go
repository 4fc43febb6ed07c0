package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corl-project/corl/activities"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/rl"
	"github.com/corl-project/corl/spec"
)

func testSpec(rounds int) spec.RunSpec {
	s := spec.Default()
	s.Name, s.Rounds, s.PromptsPerRound = "t", rounds, 2
	s.Reward.Mode = rl.PeerRing
	s.Members = []spec.Member{{Name: "a", Base: "x"}, {Name: "b", Base: "y", View: 1}}
	s.Checkpoint.Every, s.Eval.Every, s.Eval.Size = 2, 0, 1
	return s
}

// fake is a scripted cohort of workers: it records calls and can fail once.
type fake struct {
	mu       sync.Mutex
	calls    map[string]int
	byKey    map[string]int   // "Checkpoint/a/3" -> calls
	failOnce map[string]error // "Generate/b/1" -> error, consumed on use
	// acquire, when set, places members instead of the default (one new
	// queue per placement).
	acquire func(context.Context, pipeline.AcquireInput) (pipeline.AcquireOutput, error)
	// dead queues: their workers never finish what they were given.
	dead map[string]bool
	// diag, when set, is every round's grade diagnostics.
	diag *record.Diagnostics
	// noEvalSet: evaluations find no problems.
	noEvalSet bool
	// rounds is the spec's rounds each call was given, by key.
	rounds map[string]int
	// judgeFLOPs, when set, is every grade's per-member judging cost.
	judgeFLOPs []float64
}

func (f *fake) isDead(ctx context.Context) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dead[activity.GetInfo(ctx).TaskQueue]
}

func (f *fake) note(name string, ref pipeline.MemberRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[name]++
	key := fmt.Sprintf("%s/%s/%d", name, ref.Spec.Members[ref.Member].Name, ref.Round)
	f.byKey[key]++
	if f.rounds == nil {
		f.rounds = map[string]int{}
	}
	f.rounds[key] = ref.Spec.Rounds
	if err, ok := f.failOnce[key]; ok {
		delete(f.failOnce, key)
		return err
	}
	return nil
}

// completed runs the workflow to its end and returns its result; the test
// fails if the run did not complete or ended in error.
func completed(t *testing.T, env *testsuite.TestWorkflowEnvironment, in Input) Result {
	t.Helper()
	env.ExecuteWorkflow(CohortRun, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

// a is the activities' nil receiver: the mocks name its methods.
var a *activities.Activities

func newEnv(t *testing.T, f *fake) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Activities{})
	env.RegisterActivityWithOptions(activities.ValidateSpec, activity.RegisterOptions{Name: pipeline.ValidateSpec})
	// Work sent to a dead worker's queue never comes back (test-clock
	// hours): only the run's own watch can end the wait.
	onDead := mock.MatchedBy(f.isDead)
	never := 10 * time.Hour
	env.OnActivity(a.Replay, onDead, mock.Anything).Return(0, nil).After(never)
	env.OnActivity(a.Generate, onDead, mock.Anything).Return(pipeline.GenerateOutput{}, nil).After(never)
	env.OnActivity(a.Update, onDead, mock.Anything).Return(pipeline.UpdateOutput{}, nil).After(never)
	env.OnActivity(a.Checkpoint, onDead, mock.Anything).Return("", nil).After(never)
	env.OnActivity(a.Evaluate, onDead, mock.Anything).Return(pipeline.EvalOutput{}, nil).After(never)
	acquired := 0
	env.OnActivity(a.Acquire, mock.Anything, mock.Anything).Return(func(ctx context.Context, in pipeline.AcquireInput) (pipeline.AcquireOutput, error) {
		f.note("Acquire", in.MemberRef)
		if f.acquire != nil {
			return f.acquire(ctx, in)
		}
		acquired++
		return pipeline.AcquireOutput{Queue: fmt.Sprintf("q%d", acquired), Round: in.CheckpointRound, CheckpointKey: in.CheckpointKey}, nil
	})
	env.OnActivity(a.Replay, mock.Anything, mock.Anything).Return(func(_ context.Context, in pipeline.ReplayInput) (int, error) {
		return in.To, f.note("Replay", in.MemberRef)
	})
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(func(_ context.Context, ref pipeline.MemberRef) (pipeline.GenerateOutput, error) {
		return pipeline.GenerateOutput{Key: fmt.Sprintf("r%d-%d", ref.Round, ref.Member), Seconds: 1, FLOPs: 10}, f.note("Generate", ref)
	}).After(time.Minute) // test-clock time: a round takes a minute
	env.OnActivity(a.Grade, mock.Anything, mock.Anything).Return(func(_ context.Context, in pipeline.GradeInput) (pipeline.GradeOutput, error) {
		f.note("Grade", pipeline.MemberRef{Spec: in.Spec, Round: in.Round})
		d := record.Diagnostics{Models: make([]record.ModelDiag, 2)}
		if f.diag != nil {
			d = *f.diag
		}
		return pipeline.GradeOutput{Key: fmt.Sprintf("g%d", in.Round), Diag: d, JudgeFLOPs: f.judgeFLOPs}, nil
	})
	env.OnActivity(a.Update, mock.Anything, mock.Anything).Return(func(_ context.Context, ref pipeline.MemberRef) (pipeline.UpdateOutput, error) {
		return pipeline.UpdateOutput{Stats: record.UpdateStats{Loss: 0.5}, Seconds: 1, FLOPs: 5}, f.note("Update", ref)
	})
	env.OnActivity(a.Checkpoint, mock.Anything, mock.Anything).Return(func(_ context.Context, ref pipeline.MemberRef) (string, error) {
		return fmt.Sprintf("ckpt/%d/%d", ref.Round, ref.Member), f.note("Checkpoint", ref)
	})
	env.OnActivity(a.Release, mock.Anything, mock.Anything).Return(func(_ context.Context, ref pipeline.MemberRef) error {
		return f.note("Release", ref)
	})
	env.OnActivity(a.Evaluate, mock.Anything, mock.Anything).Return(func(_ context.Context, ref pipeline.MemberRef) (pipeline.EvalOutput, error) {
		if f.noEvalSet {
			return pipeline.EvalOutput{}, f.note("Evaluate", ref)
		}
		return pipeline.EvalOutput{PassAt1: 0.5, Correct: []bool{true}, Answers: []string{"1"},
			Pool: [][]string{{"1"}}, Truth: []string{"1"}}, f.note("Evaluate", ref)
	})
	return env
}

func newFake() *fake {
	return &fake{calls: map[string]int{}, byKey: map[string]int{}, failOnce: map[string]error{}, dead: map[string]bool{}}
}

func TestCohortRunCompletes(t *testing.T) {
	f := newFake()
	env := newEnv(t, f)
	res := completed(t, env, Input{RunSpec: testSpec(3)})
	if res.Rounds != 3 || res.Stopped || res.Checkpoints[1] != "ckpt/3/1" {
		t.Fatalf("result %+v", res)
	}
	// Evaluate before round 1 and after round 3; every member released at the end.
	want := map[string]int{"Acquire": 2, "Generate": 6, "Grade": 3, "Update": 6, "Checkpoint": 4, "Evaluate": 4, "Release": 2}
	for k, n := range want {
		if f.calls[k] != n {
			t.Errorf("%s called %d times, want %d (all calls %v)", k, f.calls[k], n, f.calls)
		}
	}
}

// TestMaxFLOPsEndsTheRun: a run with a FLOP budget ends after the round
// that spends it (each round here costs 2 members x (10 + 5) = 30), with a
// final checkpoint and evaluation, though rounds allows more.
func TestMaxFLOPsEndsTheRun(t *testing.T) {
	f := newFake()
	env := newEnv(t, f)
	s := testSpec(10)
	s.MaxFLOPs = 70
	res := completed(t, env, Input{RunSpec: s})
	if res.Rounds != 3 || res.Checkpoints[0] != "ckpt/3/0" || res.Evals[len(res.Evals)-1].Round != 3 || res.GenFLOPs[0] != 30 {
		t.Fatalf("result %+v, want 3 rounds, checkpointed and evaluated after the third", res)
	}
	if f.calls["Generate"] != 6 {
		t.Errorf("%d generations after the budget ran out", f.calls["Generate"]-6)
	}
	// The first round's 30 FLOPs say the budget pays for 3 rounds: from
	// the second round on, updates are scheduled over 3, not 10.
	if f.rounds["Update/a/0"] != 10 || f.rounds["Update/a/1"] != 3 || f.rounds["Update/b/2"] != 3 {
		t.Errorf("the updates' schedules: %v", f.rounds)
	}
}

// TestLostWorkerIsReplaced: a member's worker disappears during round 3's
// update; the workflow places it again from the round-2 checkpoint, replays
// nothing (checkpoint is current) or the rounds since, and finishes.
func TestLostWorkerIsReplaced(t *testing.T) {
	f := newFake()
	f.failOnce["Update/b/2"] = temporal.NewNonRetryableApplicationError("gone", pipeline.ErrMemberNotHere, nil)
	f.failOnce["Generate/a/3"] = temporal.NewTimeoutError(0, errors.New("schedule to start")) // enums zero: any timeout
	env := newEnv(t, f)
	res := completed(t, env, Input{RunSpec: testSpec(4)})
	if res.Rounds != 4 {
		t.Fatalf("result %+v", res)
	}
	if f.calls["Acquire"] != 4 {
		t.Errorf("Acquire called %d times, want 2 initial + 2 re-placements", f.calls["Acquire"])
	}
	// a was lost at round 3 with its checkpoint at round 2: one replayed round.
	if f.calls["Replay"] != 1 {
		t.Errorf("Replay called %d times, want 1", f.calls["Replay"])
	}
}

func TestPauseResumeStopAndQuery(t *testing.T) {
	f := newFake()
	env := newEnv(t, f)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalPause, nil) }, time.Millisecond)
	env.RegisterDelayedCallback(func() {
		p := queryProgress(t, env)
		if !p.Paused || p.Rounds != 10 || len(p.Members) != 2 {
			t.Errorf("progress while paused: %+v", p)
		}
		env.SignalWorkflow(SignalResume, nil)
	}, time.Hour)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalStop, nil) }, time.Hour+150*time.Second)
	res := completed(t, env, Input{RunSpec: testSpec(10)})
	if !res.Stopped || res.Rounds >= 10 || res.Checkpoints[0] == "" || !strings.HasPrefix(res.Checkpoints[0], fmt.Sprintf("ckpt/%d/", res.Rounds)) {
		t.Fatalf("stop: %+v", res)
	}
}

func TestBadSpecFailsFast(t *testing.T) {
	env := newEnv(t, newFake())
	s := testSpec(1)
	s.Members = nil
	env.ExecuteWorkflow(CohortRun, Input{RunSpec: s})
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "members: the cohort is empty") {
		t.Fatalf("err = %v", err)
	}
}

// TestReplayRecordedHistory replays a real run's history (recorded by
// `go test -tags e2e ./e2e -run PipelineMatches -update`) against the current
// workflow code: a change that breaks determinism fails here.
// TestReplayRecordedHistory: histories recorded by earlier versions of the
// workflow (cohortrun-history.json is today's, rewritten by the e2e tests'
// -update; the others are kept from before version markers were added)
// replay without nondeterminism.
func TestReplayRecordedHistory(t *testing.T) {
	files, _ := filepath.Glob("testdata/cohortrun-history*.json")
	if len(files) < 2 {
		t.Fatalf("recorded histories: %v, want today's and an older one", files)
	}
	for _, f := range files {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflow(CohortRun)
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestEveryVersionBranchIsRecorded: each GetVersion change in the
// workflow code has a recorded history that took its new branch, so the
// replay test covers today's code paths, not only old ones, and a row in
// doc.go's table of markers (and the table no row the code dropped). (The e2e
// tests' -update records them: a run, a failed run, one with a FLOPs
// budget and one without an evaluation set.)
func TestEveryVersionBranchIsRecorded(t *testing.T) {
	var changes []string
	sources, _ := filepath.Glob("*.go")
	call := regexp.MustCompile(`GetVersion\((?:r\.)?ctx, "([a-z0-9-]+)"`)
	for _, f := range sources {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllSubmatch(b, -1) {
			changes = append(changes, string(m[1]))
		}
	}
	if len(changes) == 0 {
		t.Fatal("found no GetVersion call")
	}
	recorded := map[string]bool{}
	files, _ := filepath.Glob("testdata/cohortrun-history*.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			Events []struct {
				Marker *struct {
					Details map[string]struct {
						Payloads []struct {
							Data []byte `json:"data"`
						} `json:"payloads"`
					} `json:"details"`
				} `json:"markerRecordedEventAttributes"`
			} `json:"events"`
		}
		if err := json.Unmarshal(b, &h); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, e := range h.Events {
			if e.Marker == nil {
				continue
			}
			for _, p := range e.Marker.Details["change-id"].Payloads {
				var id string
				if json.Unmarshal(p.Data, &id) == nil {
					recorded[id] = true
				}
			}
		}
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^//\t([a-z0-9-]+) +\d{4}-\d\d-\d\d `)
	var listed []string
	for _, m := range row.FindAllSubmatch(doc, -1) {
		listed = append(listed, string(m[1]))
	}
	for _, c := range changes {
		if !recorded[c] {
			t.Errorf("GetVersion %q: no recorded history takes its branch (go test -tags e2e ./e2e -update)", c)
		}
		if !slices.Contains(listed, c) {
			t.Errorf("GetVersion %q: no row in doc.go's table of version markers", c)
		}
	}
	for _, l := range listed {
		if !slices.Contains(changes, l) {
			t.Errorf("doc.go lists version marker %q, which the workflow code no longer calls", l)
		}
	}
}

// TestJudgingCountsTowardsTheBudget: the judges' scoring cost that grading
// reads from their blobs is each judge's, in the result and in the budget.
func TestJudgingCountsTowardsTheBudget(t *testing.T) {
	f := newFake()
	f.judgeFLOPs = []float64{7, 9}
	res := completed(t, newEnv(t, f), Input{RunSpec: testSpec(3)})
	if len(res.JudgeFLOPs) != 2 || res.JudgeFLOPs[0] != 21 || res.JudgeFLOPs[1] != 27 {
		t.Fatalf("judge FLOPs %v, want [21 27] after 3 rounds", res.JudgeFLOPs)
	}
	// A budget that the rounds' generation and updates alone would not
	// spend by round 2, but with the judging they do.
	f = newFake()
	f.judgeFLOPs = []float64{100, 100}
	s := testSpec(5)
	s.MaxFLOPs = 2 * (2*10 + 2*5 + 200)
	if res := completed(t, newEnv(t, f), Input{RunSpec: s}); res.Rounds != 2 {
		t.Errorf("ran %d rounds; the judged budget pays for 2", res.Rounds)
	}
}

// TestContinueAsNewCarriesState: when the server suggests it, the run
// continues as new after a round with its state (round, placements,
// checkpoints) in the input.
func TestContinueAsNewCarriesState(t *testing.T) {
	env := newEnv(t, newFake())
	env.SetContinueAsNewSuggested(true)
	env.ExecuteWorkflow(CohortRun, Input{RunSpec: testSpec(3)})
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("err = %v, want continue-as-new", err)
	}
	var next Input
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.State == nil || next.State.Round != 1 || next.State.Queue[0] == "" || next.Name != "t" {
		t.Fatalf("continued with %+v", next.State)
	}
	// The continued run picks up at round 1 with the members still placed.
	f := newFake()
	env2 := newEnv(t, f)
	env2.ExecuteWorkflow(CohortRun, next)
	if err := env2.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res Result
	env2.GetWorkflowResult(&res)
	if res.Rounds != 3 || f.calls["Acquire"] != 0 || f.calls["Generate"] != 4 {
		t.Fatalf("continued run: %+v, calls %v", res, f.calls)
	}
}

// TestLostWorkerDuringEvaluation: a worker lost while evaluating member a or
// b, at the round-0 baseline or mid-run, is placed again and evaluated
// again; every stored score was computed (the fake scores 0.5, never 0) and
// the others are not rerun.
func TestLostWorkerDuringEvaluation(t *testing.T) {
	for _, key := range []string{"Evaluate/a/0", "Evaluate/b/0", "Evaluate/a/2", "Evaluate/b/2"} {
		t.Run(key, func(t *testing.T) {
			f := newFake()
			f.failOnce[key] = temporal.NewNonRetryableApplicationError("gone", pipeline.ErrMemberNotHere, nil)
			env := newEnv(t, f)
			s := testSpec(4)
			s.Eval.Every = 2
			res := completed(t, env, Input{RunSpec: s})
			if len(res.Evals) != 3 {
				t.Fatalf("evaluations %+v, want rounds 0, 2 and 4", res.Evals)
			}
			for i, ev := range res.Evals {
				if ev.Round != 2*i || ev.PassAt1[0] != 0.5 || ev.PassAt1[1] != 0.5 || ev.Cohort.Correct != 1 {
					t.Errorf("evaluation %d: %+v: a score that was not computed was stored", i, ev)
				}
			}
			if f.calls["Evaluate"] != 7 || f.calls["Acquire"] != 3 {
				t.Errorf("calls %v: want 6 evaluations + 1 redone, 2 placements + 1", f.calls)
			}
		})
	}
}

// TestLostWorkerDuringFinalCheckpoint: a member lost while writing the last
// round's checkpoint is placed again and checkpointed; the run does not end
// with that member's older checkpoint or skip the final evaluation.
func TestLostWorkerDuringFinalCheckpoint(t *testing.T) {
	f := newFake()
	f.failOnce["Checkpoint/b/3"] = temporal.NewTimeoutError(0, errors.New("heartbeat"))
	env := newEnv(t, f)
	res := completed(t, env, Input{RunSpec: testSpec(3)})
	if res.Checkpoints[0] != "ckpt/3/0" || res.Checkpoints[1] != "ckpt/3/1" {
		t.Errorf("final checkpoints %v, want both at round 3", res.Checkpoints)
	}
	if n := len(res.Evals); n != 2 || res.Evals[n-1].Round != 3 {
		t.Errorf("evaluations %+v, want the baseline and round 3", res.Evals)
	}
	if f.calls["Checkpoint"] != 5 {
		t.Errorf("Checkpoint called %d times, want 2 (round 2) + 2 (round 3) + 1 redone", f.calls["Checkpoint"])
	}
}

// TestProgressReportsRoundSeconds: the progress query's last round carries
// its wall time (a round takes a minute of the test clock here).
func TestProgressReportsRoundSeconds(t *testing.T) {
	env := newEnv(t, newFake())
	env.RegisterDelayedCallback(func() {
		p := queryProgress(t, env)
		if p.Last == nil || p.Last.Seconds < 60 || p.Last.Seconds > 70 {
			t.Fatalf("last round %+v: want about 60 seconds", p.Last)
		}
		// Generation takes the test clock's minute; the round-2 checkpoint
		// (every 2 rounds) is recorded with the round it followed.
		if g := p.Last.Stages["generate"]; g < 60 || g > 61 || p.Last.Round != 2 {
			t.Errorf("round %d stages %v: want generate = 60 s", p.Last.Round, p.Last.Stages)
		}
		for _, stage := range []string{"grade", "update", "checkpoint"} {
			if _, ok := p.Last.Stages[stage]; !ok {
				t.Errorf("round %d stages %v: no %s", p.Last.Round, p.Last.Stages, stage)
			}
		}
	}, 150*time.Second)
	env.ExecuteWorkflow(CohortRun, Input{RunSpec: testSpec(3)})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
}

// TestJSONSpecGetsDefaults: a spec.json with only examples/local.yaml's keys
// (as `temporal workflow start --input-file` sends it) decodes over the
// defaults, passes validation and runs; the carried state survives decoding.
func TestJSONSpecGetsDefaults(t *testing.T) {
	raw := `{"name": "local", "seed": 1, "rounds": 2, "prompts_per_round": 16,
	  "data": {"tasks": ["arith", "linear", "mod"], "data_seed": 1, "rl_size": 200, "max_level": 1},
	  "reward": {"mode": "peer-ring"}, "generation": {"num_generations": 8, "temperature": 1.0, "max_completion_length": 64},
	  "grpo": {"num_iterations": 1}, "optim": {"learning_rate": 0.00005}, "eval": {"every": 4, "size": 30},
	  "checkpoint": {"every": 4},
	  "members": [{"name": "gpt2-small", "base": "examples/bases/gpt2-small"}, {"name": "llama-small", "base": "examples/bases/llama-small", "view": 1}]}`
	var in Input
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		t.Fatal(err)
	}
	d := spec.Default()
	if in.MicroBatchSize != d.MicroBatchSize || in.GRPO.Epsilon != d.GRPO.Epsilon || in.Optim.AdamEpsilon != d.Optim.AdamEpsilon ||
		in.GRPO.LossType != d.GRPO.LossType || in.Optim.LearningRate != 0.00005 || len(in.Data.Tasks) != 3 {
		t.Fatalf("decoded spec %+v: omitted keys must take the defaults, given ones their values", in.RunSpec)
	}
	withState := []byte(`{"name": "x", "state": {"round": 3, "queue": ["q1"]}, "heartbeat_timeout_s": 7}`)
	var in2 Input
	if err := json.Unmarshal(withState, &in2); err != nil || in2.State == nil || in2.State.Round != 3 || in2.HeartbeatTimeout != 7 || in2.Rounds != d.Rounds {
		t.Fatalf("input with state: %+v, %v", in2, err)
	}
	env := newEnv(t, newFake())
	env.ExecuteWorkflow(CohortRun, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("a spec.json with the example's keys failed: %v", err)
	}
}

// TestBadJSONSpecListsEveryKey: a bad spec fails the run in its first step,
// naming every bad key, before any activity runs.
func TestBadJSONSpecListsEveryKey(t *testing.T) {
	var in Input
	if err := json.Unmarshal([]byte(`{"name": "bad", "rounds": 2, "micro_batch_size": 0,
	  "reward": {"mode": "vote"}, "optim": {"adam_epsilon": 0}, "members": [{"name": "a", "base": "x", "view": 3}, {"name": "b", "base": "y"}]}`), &in); err != nil {
		t.Fatal(err)
	}
	f := newFake()
	env := newEnv(t, f)
	env.ExecuteWorkflow(CohortRun, in)
	err := env.GetWorkflowError()
	for _, key := range []string{"micro_batch_size", "reward.mode", "optim.adam_epsilon", "members[0].view"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("activities ran before the spec was refused: %v", f.calls)
	}
}

// TestCancelCheckpoints: a run cancelled mid-way (workflow cancel) ends
// cancelled, with every member checkpointed at the round it reached.
func TestCancelCheckpoints(t *testing.T) {
	f := newFake()
	env := newEnv(t, f)
	env.RegisterDelayedCallback(env.CancelWorkflow, 210*time.Second) // during round 4 (a round is a minute; checkpoints every 2)
	env.ExecuteWorkflow(CohortRun, Input{RunSpec: testSpec(10)})
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("err = %v, want cancelled", err)
	}
	for _, key := range []string{"Checkpoint/a/3", "Checkpoint/b/3"} {
		if f.byKey[key] != 1 {
			t.Errorf("%s called %d times, want once, on cancel (calls %v)", key, f.byKey[key], f.byKey)
		}
	}
}

// queryProgress asks the running workflow for its progress.
func queryProgress(t *testing.T, env *testsuite.TestWorkflowEnvironment) Progress {
	t.Helper()
	var p Progress
	v, err := env.QueryWorkflow(QueryProgress)
	if err == nil {
		err = v.Get(&p)
	}
	if err != nil {
		t.Error(err)
	}
	return p
}

// TestEveryStageSurvivesAFault: a fault in each stage of a round (the
// worker lost, or an activity failing once) is recovered, and the run ends
// with every round trained, both final checkpoints and every evaluation
// computed.
func TestEveryStageSurvivesAFault(t *testing.T) {
	lostWorker := func() error { return temporal.NewTimeoutError(0, errors.New("heartbeat")) }
	notHere := func() error {
		return temporal.NewNonRetryableApplicationError("gone", pipeline.ErrMemberNotHere, nil)
	}
	for key, fault := range map[string]func() error{
		"Acquire/b/0":    lostWorker, // placement (pool: retried)
		"Generate/a/1":   notHere,
		"Grade/a/1":      func() error { return errors.New("grading worker died") }, // cpu pool: retried
		"Update/b/2":     lostWorker,
		"Generate/b/2":   func() error { return errors.New("store unreachable") }, // member queue: retried by the workflow
		"Checkpoint/a/2": lostWorker,
		"Evaluate/b/0":   notHere,
		"Evaluate/a/3":   lostWorker,
	} {
		t.Run(key, func(t *testing.T) {
			f := newFake()
			f.failOnce[key] = fault()
			env := newEnv(t, f)
			s := testSpec(3)
			s.Eval.Every = 3
			res := completed(t, env, Input{RunSpec: s})
			if res.Rounds != 3 || res.Checkpoints[0] != "ckpt/3/0" || res.Checkpoints[1] != "ckpt/3/1" || len(res.Evals) != 2 {
				t.Fatalf("result %+v", res)
			}
			for _, ev := range res.Evals {
				if ev.PassAt1[0] != 0.5 || ev.PassAt1[1] != 0.5 {
					t.Errorf("evaluation %+v holds a score that was not computed", ev)
				}
			}
			if _, left := f.failOnce[key]; left {
				t.Errorf("the fault at %s never fired", key)
			}
		})
	}
}

// TestPlacementSpreadsOverThePool: members go to the least loaded live
// worker with a free slot; a worker that is full (with another run's
// members) or gone is passed over; when every slot is taken, members share
// the least loaded worker.
func TestPlacementSpreadsOverThePool(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workers []pipeline.WorkerInfo
		busy    map[string]int // members of other runs already held
		dead    string         // a listed worker that never picks up its task
		members int
		want    []string // worker queue per member
	}{
		{"one each", []pipeline.WorkerInfo{wi("corl-gpu-w1", 1), wi("corl-gpu-w2", 1)}, nil, "", 2,
			[]string{"corl-gpu-w1", "corl-gpu-w2"}},
		{"fewer workers than members share", []pipeline.WorkerInfo{wi("corl-gpu-w1", 1)}, nil, "", 2,
			[]string{"corl-gpu-w1", "corl-gpu-w1"}},
		{"by slots", []pipeline.WorkerInfo{wi("corl-gpu-w1", 2), wi("corl-gpu-w2", 1)}, nil, "", 3,
			[]string{"corl-gpu-w1", "corl-gpu-w2", "corl-gpu-w1"}},
		{"a worker full with another run", []pipeline.WorkerInfo{wi("corl-gpu-w1", 1), wi("corl-gpu-w2", 1)}, map[string]int{"corl-gpu-w1": 1}, "", 2,
			[]string{"corl-gpu-w2", "corl-gpu-w1"}},
		{"a dead worker still listed", []pipeline.WorkerInfo{wi("corl-gpu-w0", 1), wi("corl-gpu-w1", 1), wi("corl-gpu-w2", 1)}, nil, "corl-gpu-w0", 2,
			[]string{"corl-gpu-w1", "corl-gpu-w2"}},
		{"no list: the pool queue", nil, nil, "", 2, []string{"q1", "q2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			env := newEnv(t, f)
			env.OnActivity(a.Workers, mock.Anything).Return(tc.workers, nil)
			slots := map[string]int{}
			for _, w := range tc.workers {
				slots[w.Queue] = w.Slots
			}
			held := map[string]int{}
			for q, k := range tc.busy {
				held[q] = k
			}
			pooled := 0
			f.acquire = func(ctx context.Context, in pipeline.AcquireInput) (pipeline.AcquireOutput, error) {
				q := activity.GetInfo(ctx).TaskQueue
				switch {
				case q == tc.dead:
					return pipeline.AcquireOutput{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
				case q == pipeline.GPUPool:
					pooled++
					q = fmt.Sprintf("q%d", pooled)
				case in.WithinSlots && held[q] >= slots[q]:
					return pipeline.AcquireOutput{}, temporal.NewNonRetryableApplicationError("full", pipeline.ErrWorkerFull, nil)
				}
				held[q]++
				return pipeline.AcquireOutput{Queue: q, Round: in.CheckpointRound}, nil
			}
			generatedOn := map[int]string{}
			env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
				if info.ActivityType.Name != "Generate" {
					return
				}
				var ref pipeline.MemberRef
				if err := args.Get(&ref); err == nil {
					generatedOn[ref.Member] = info.TaskQueue
				}
			})
			s := testSpec(1)
			s.Members = s.Members[:0]
			for i := range tc.members {
				s.Members = append(s.Members, spec.Member{Name: fmt.Sprintf("m%d", i), Base: "x"})
			}
			env.ExecuteWorkflow(CohortRun, Input{RunSpec: s})
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.want {
				if generatedOn[i] != want {
					t.Errorf("member %d generated on %q, want %q (all: %v)", i, generatedOn[i], want, generatedOn)
				}
			}
		})
	}
}

func wi(queue string, slots int) pipeline.WorkerInfo {
	return pipeline.WorkerInfo{Queue: queue, Slots: slots}
}

// TestEveryEndingReleasesItsMembers: a run that fails (a non-finite update),
// or is cancelled (between checkpoints or right after one), has every
// worker that holds a member release it, as a completed run does.
func TestEveryEndingReleasesItsMembers(t *testing.T) {
	nonFinite := temporal.NewNonRetryableApplicationError("loss is NaN", pipeline.ErrNonFinite, nil)
	for _, tc := range []struct {
		name     string
		fail     string        // an activity that fails the run
		cancelAt time.Duration // or a cancellation at this test-clock time
	}{
		{name: "failed", fail: "Update/a/1"},
		{name: "cancelled between checkpoints", cancelAt: 210 * time.Second},
		{name: "cancelled after a checkpoint", cancelAt: 125 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			if tc.fail != "" {
				f.failOnce[tc.fail] = nonFinite
			}
			env := newEnv(t, f)
			if tc.cancelAt > 0 {
				env.RegisterDelayedCallback(env.CancelWorkflow, tc.cancelAt)
			}
			env.ExecuteWorkflow(CohortRun, Input{RunSpec: testSpec(10)})
			if env.GetWorkflowError() == nil {
				t.Fatal("the run did not end in error")
			}
			if f.calls["Release"] != 2 {
				t.Errorf("Release called %d times, want once per member (calls %v)", f.calls["Release"], f.byKey)
			}
		})
	}
}

// TestNoStageWaitsOnADeadWorker: a worker that dies in the middle of any
// stage (its work never finishes, its queue leaves the pool's listing) has
// its member moved within a watch interval, not after a heartbeat or
// schedule-to-start timeout; a second death during the replay on the new
// worker too. The run ends with every round and evaluation done.
func TestNoStageWaitsOnADeadWorker(t *testing.T) {
	for _, kills := range [][]string{
		{"Evaluate/b/0"}, {"Generate/b/1"}, {"Update/b/2"}, {"Checkpoint/b/2"}, {"Evaluate/b/3"},
		{"Generate/b/1", "Replay/b/0"},
	} {
		t.Run(strings.Join(kills, "+"), func(t *testing.T) {
			f := newFake()
			env := newEnv(t, f)
			pool := []string{"w1", "w2", "w3", "w4"}
			env.OnActivity(a.Workers, mock.Anything).Return(func(context.Context) ([]pipeline.WorkerInfo, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				var live []pipeline.WorkerInfo
				for _, q := range pool {
					if !f.dead[q] {
						live = append(live, wi(q, 1))
					}
				}
				return live, nil
			})
			f.acquire = func(ctx context.Context, in pipeline.AcquireInput) (pipeline.AcquireOutput, error) {
				return pipeline.AcquireOutput{Queue: activity.GetInfo(ctx).TaskQueue, Round: in.CheckpointRound, CheckpointKey: in.CheckpointKey}, nil
			}
			fired := map[string]bool{}
			env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
				var ref pipeline.MemberRef
				if args.Get(&ref) != nil || len(ref.Spec.Members) == 0 {
					return
				}
				key := fmt.Sprintf("%s/%s/%d", info.ActivityType.Name, ref.Spec.Members[ref.Member].Name, ref.Round)
				for _, k := range kills {
					if k == key && !fired[k] {
						fired[k] = true
						f.mu.Lock()
						f.dead[info.TaskQueue] = true
						f.mu.Unlock()
					}
				}
			})
			s := testSpec(3)
			s.Eval.Every = 3
			start := env.Now()
			res := completed(t, env, Input{RunSpec: s})
			if res.Rounds != 3 || len(res.Evals) != 2 || res.Moves != len(kills) {
				t.Fatalf("result %+v, want 3 rounds, 2 evaluations, %d moves", res, len(kills))
			}
			for _, k := range kills {
				if !fired[k] {
					t.Errorf("%s never ran: the fault did not land", k)
				}
			}
			// Three rounds of a minute each, plus per death at most a watch
			// interval (30 s) and the round run again (a minute).
			if took := env.Now().Sub(start); took > 3*time.Minute+time.Duration(len(kills))*90*time.Second {
				t.Errorf("the run took %s of workflow time: it waited on a dead worker", took)
			}
		})
	}
}

// TestCollapseIsNoted: a cohort whose members vote one answer on most
// prompts, against varied labels, is noted in the run's progress, once per
// member and once for the cohort however many rounds it lasts; so is a
// first round without gradient.
func TestCollapseIsNoted(t *testing.T) {
	f := newFake()
	truth := 0.3
	f.diag = &record.Diagnostics{Models: []record.ModelDiag{{ModalAnswer: "yes", ModalShare: 0.9, ZeroVarFrac: 1}, {ModalAnswer: "yes", ModalShare: 1}},
		TruthModalShare: &truth}
	env := newEnv(t, f)
	var notes []string
	env.RegisterDelayedCallback(func() { notes = queryProgress(t, env).Notes }, 250*time.Second)
	env.ExecuteWorkflow(CohortRun, Input{RunSpec: testSpec(5)})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"round 1: member a: 100% of the round's prompts gave all its samples one reward",
		"round 1: member a: 90% of the round's prompts vote one answer", "round 1: member b: 100%", "round 1: the cohort has collapsed onto one answer (\"yes\")"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes lack %q:\n%s", want, joined)
		}
	}
	if len(notes) != 4 {
		t.Errorf("%d notes after 4 collapsed rounds, want 4 (each once):\n%s", len(notes), joined)
	}
}

// TestNoEvaluationWithoutProblems: a run whose data has no evaluation
// problems evaluates once, learns there is nothing to score, records no
// score (a pass@1 of 0 would be a lie) and does not evaluate again, as the
// local runner does.
func TestNoEvaluationWithoutProblems(t *testing.T) {
	f := newFake()
	f.noEvalSet = true
	env := newEnv(t, f)
	s := testSpec(4)
	s.Eval.Every = 2
	res := completed(t, env, Input{RunSpec: s})
	if res.Rounds != 4 || len(res.Evals) != 0 {
		t.Fatalf("result %+v, want 4 rounds and no evaluation", res)
	}
	if f.calls["Evaluate"] != 2 {
		t.Errorf("Evaluate called %d times, want once per member (the bases)", f.calls["Evaluate"])
	}
}
