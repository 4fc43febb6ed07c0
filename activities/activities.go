package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/cohort"
	"github.com/corl-project/corl/config"
	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/metrics"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/pipeline/history"
	"github.com/corl-project/corl/rl"
	"github.com/corl-project/corl/spec"
)

// Activities carries what the activities need. One value serves one worker
// process; Queue is that process's own task queue.
type Activities struct {
	Store   blob.Store
	Backend gpu.Backend
	Queue   string
	// Metrics records corl's Prometheus metrics; nil: off.
	Metrics *metrics.Corl
	// Client reads other workflows' results (RunResult) and the pool's
	// pollers (Workers).
	Client client.Client
	// Slots is how many members this worker takes before a placement looks
	// elsewhere (0: one).
	Slots int

	mu     sync.Mutex // one compute activity at a time: the backend is a single stream
	held   map[string]*held
	dataMu sync.Mutex
	data   map[string]*cohort.Data
}

// held is a member this worker holds.
type held struct {
	run       string
	workflow  string // the run's workflow ID ("": a caller without one, never reclaimed)
	execution string // the workflow run ID that placed it ("": unknown, the ID's newest run is asked about)
	member    *rl.Member
	round     int                           // rounds whose updates the weights contain
	stats     map[int]pipeline.UpdateOutput // update results by round, for idempotent retries
}

// New returns activities for a worker.
func New(store blob.Store, be gpu.Backend, queue string) *Activities {
	return &Activities{Store: store, Backend: be, Queue: queue, held: map[string]*held{}, data: map[string]*cohort.Data{}}
}

func heldKey(run, member string) string { return run + "\x00" + member }

func notHere(ref pipeline.MemberRef, why string) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("member %s of run %s at round %d: %s", ref.Spec.Members[ref.Member].Name, ref.RunKey(), ref.Round, why),
		pipeline.ErrMemberNotHere, nil)
}

func badSpec(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrBadSpec, err)
}

// classify turns compute errors into non-retryable ones where retrying with
// the same inputs cannot help.
func classify(err error, name string, round int) error {
	if errors.Is(err, model.ErrNonFinite) || strings.Contains(err.Error(), "GRPO loss is") {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("model %s, round %d: %v", name, round, err), pipeline.ErrNonFinite, err)
	}
	return err
}

// runData validates the spec and returns its prompts and evaluation set,
// cached per data description (not per run name: two specs under one name
// with other data must not share prompts).
func (a *Activities) runData(s *spec.RunSpec) (*cohort.Data, error) {
	if err := config.Validate(s); err != nil {
		return nil, badSpec(err)
	}
	k, _ := json.Marshal(struct {
		D     spec.Data
		E     int
		Split string
	}{s.Data, s.Eval.Size, s.Eval.Split})
	a.dataMu.Lock()
	defer a.dataMu.Unlock()
	if d, ok := a.data[string(k)]; ok {
		return d, nil
	}
	d, err := cohort.LoadData(s)
	if err != nil {
		return nil, badSpec(err)
	}
	a.data[string(k)] = d
	return d, nil
}

// member returns the held member at exactly round ref.Round.
func (a *Activities) member(ref pipeline.MemberRef) (*held, error) {
	h, ok := a.held[heldKey(ref.RunKey(), ref.Spec.Members[ref.Member].Name)]
	if !ok {
		return nil, notHere(ref, "not held by worker "+a.Queue)
	}
	if h.round != ref.Round {
		return nil, notHere(ref, fmt.Sprintf("worker %s holds it at round %d", a.Queue, h.round))
	}
	return h, nil
}

// exclusive heartbeats what (from now on, so an activity queued behind
// another member's on this worker's single device does not look dead) and
// takes the device; the returned func releases both.
func (a *Activities) exclusive(ctx context.Context, what string) (release func()) {
	stop := heartbeat(ctx, func() any { return what })
	a.mu.Lock()
	return func() {
		a.mu.Unlock()
		stop()
	}
}

func memberName(ref pipeline.MemberRef) string { return ref.Spec.Members[ref.Member].Name }

// heartbeat records progress from a goroutine until stop is called, so long
// computations stay visible to the heartbeat timeout.
func heartbeat(ctx context.Context, detail func() any) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, detail())
			}
		}
	}()
	activity.RecordHeartbeat(ctx, detail())
	return func() { close(done) }
}

// RunResult returns the result of the workflow with ID id (a sweep's cell
// that an earlier run of the sweep completed), as JSON. With want, the
// earlier run must have been started with that spec: a cell's ID is its
// place in the grid, so a sweep whose grid changed since finds other
// cells' runs under its IDs, and reading one as this cell would report it
// under the wrong settings; that is a non-retryable ErrBadSpec naming both.
func (a *Activities) RunResult(ctx context.Context, id string, want *spec.RunSpec) (json.RawMessage, error) {
	defer heartbeat(ctx, func() any { return "result of " + id })()
	if a.Client == nil {
		return nil, errors.New("run result: this worker has no Temporal client")
	}
	if want != nil {
		got, err := history.StartedSpec(ctx, a.Client, id)
		if err != nil {
			return nil, err
		}
		// The method label is the report's, not the run's: a run started
		// before sweeps set it is this cell's all the same.
		got.Method = want.Method
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"run %s was started with another spec than this cell's (reward %s, %d member(s), lr %g there; reward %s, %d member(s), lr %g here): the sweep's grid changed since that run; "+
					"start the sweep under another --id (corl sweep --recorded DIR keeps the finished cells whose specs match)",
				id, got.Reward.Mode, len(got.Members), got.Optim.LearningRate, want.Reward.Mode, len(want.Members), want.Optim.LearningRate), pipeline.ErrBadSpec, nil)
		}
	}
	var res json.RawMessage
	if err := a.Client.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	return res, nil
}

// namedAs rewrites an error about the model directory dir to name it source
// (the user's directory, not a temporary copy of it).
func namedAs(err error, dir, source string) error {
	if dir == source {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), dir, source))
}

// ValidateSpec checks a run spec (config.Validate). The workflow runs it as
// its first step, a local activity, so that a bad spec (a JSON spec from the
// Temporal CLI included) fails the run at once with every bad key listed.
// A function, not a method: every method of Activities is registered as a
// regular activity.
func ValidateSpec(_ context.Context, s spec.RunSpec) error {
	if err := config.Validate(&s); err != nil {
		return badSpec(fmt.Errorf("run spec: %w", err))
	}
	return nil
}
