package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/spec"
)

// Wait is one activity the run is waiting for, for status: what, for
// which member, on which queue, since when.
type Wait struct {
	Member   string    `json:"member"`
	Activity string    `json:"activity"`
	Queue    string    `json:"queue"`
	Since    time.Time `json:"since"`
}

// PoolView is the pool's live workers as the run last listed them.
type PoolView struct {
	At     time.Time `json:"at"`
	Queues []string  `json:"queues"`
}

// onMembers starts activities on the members' own worker queues and waits
// for them. With watch > 0 it lists the pool every watch while it waits,
// and a call whose queue has left the listing (the server has not seen the
// worker poll for two minutes, or the worker recorded leaving) is
// cancelled and counts as a lost worker, so that no stage waits out a
// schedule-to-start or heartbeat timeout on a worker known to be gone.
type onMembers struct {
	opts  func(queue string) workflow.Context
	list  func() []pipeline.WorkerInfo // the pool's live workers, nil when they cannot be listed
	watch time.Duration                // 0: not watched (histories from before watch-queues)
}

// call is an activity of one member on one queue.
type call struct {
	member   int
	queue    string
	activity string
	fn, arg  any
	attempt  int
	fut      workflow.Future
	cancel   workflow.CancelFunc
}

// start runs activity fn(arg), named activity for status, for member i on
// queue.
func (m onMembers) start(i int, queue, activity string, fn, arg any) *call {
	c := &call{member: i, queue: queue, activity: activity, fn: fn, arg: arg}
	m.run(c)
	return c
}

func (m onMembers) run(c *call) {
	ctx, cancel := workflow.WithCancel(m.opts(c.queue))
	c.attempt++
	c.fut, c.cancel = workflow.ExecuteActivity(ctx, c.fn, c.arg), cancel
}

// retryable reports whether a failed call should run again on its
// worker (watched runs retry here, not in the server: a retry the server
// schedules after a heartbeat timeout would wait out schedule-to-start on
// the queue of a worker that has just died).
func retryable(err error) bool {
	if lost(err) {
		return false
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return !ae.NonRetryable() && !slices.Contains(memberNonRetryable, ae.Type())
	}
	var ce *temporal.CanceledError
	return !errors.As(err, &ce)
}

// memberAttempts is how often a watched run tries a member's activity that
// fails with a retryable error: backoffs of 1, 2, 4, 8, 16 and then 30 s
// add up to about 4 minutes.
const memberAttempts = 12

// memberNonRetryable are the error types that retrying a member's activity
// cannot help.
var memberNonRetryable = []string{pipeline.ErrMemberNotHere, pipeline.ErrBadSpec, pipeline.ErrNonFinite}

// await waits for every call (nil entries are skipped) and returns each
// one's error, get's for a completed call; a call cancelled because its
// worker left the pool returns a lost-worker error. While it waits,
// st.Waits says what for.
func (m onMembers) await(ctx workflow.Context, s *spec.RunSpec, st *State, calls []*call, get func(k int, f workflow.Future) error) []error {
	errs := make([]error, len(calls))
	open := make([]bool, len(calls))
	gone := make([]bool, len(calls))
	since := workflow.Now(ctx)
	waits := func() {
		st.Waits = nil
		for k, c := range calls {
			if open[k] {
				st.Waits = append(st.Waits, Wait{Member: s.Members[c.member].Name, Activity: c.activity, Queue: c.queue, Since: since})
			}
		}
	}
	sel := workflow.NewSelector(ctx)
	pending := 0
	for k, c := range calls {
		if c == nil {
			continue
		}
		open[k] = true
		pending++
		var done func(f workflow.Future)
		done = func(f workflow.Future) {
			if gone[k] {
				errs[k] = temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("worker %s left the pool while %s ran for member %s", c.queue, c.activity, s.Members[c.member].Name),
					pipeline.ErrMemberNotHere, nil)
			} else {
				errs[k] = get(k, f)
				if errs[k] != nil && m.watch > 0 && c.attempt < memberAttempts && retryable(errs[k]) {
					// Again on the same worker after a backoff: a store or
					// network outage of a few minutes is ridden out.
					wait := min(time.Second<<(c.attempt-1), 30*time.Second)
					sel.AddFuture(workflow.NewTimer(ctx, wait), func(workflow.Future) {
						m.run(c)
						sel.AddFuture(c.fut, done)
					})
					return
				}
			}
			open[k] = false
			pending--
			waits()
		}
		sel.AddFuture(c.fut, done)
	}
	waits()
	defer func() { st.Waits = nil }()
	var stopTimer workflow.CancelFunc
	defer func() {
		if stopTimer != nil {
			stopTimer()
		}
	}()
	tick := false
	for pending > 0 {
		if m.watch > 0 && stopTimer == nil {
			tctx, cancel := workflow.WithCancel(ctx)
			stopTimer = cancel
			sel.AddFuture(workflow.NewTimer(tctx, m.watch), func(workflow.Future) { tick = true })
		}
		sel.Select(ctx)
		if !tick {
			continue
		}
		tick, stopTimer = false, nil
		pool := m.list()
		if pool == nil {
			continue // no listing to go by: the activities' own timeouts bound the wait
		}
		view := &PoolView{At: workflow.Now(ctx)}
		for _, w := range pool {
			view.Queues = append(view.Queues, w.Queue)
		}
		st.Pool = view
		for k, c := range calls {
			if open[k] && !gone[k] && !slices.Contains(view.Queues, c.queue) {
				gone[k] = true
				c.cancel()
				st.note(fmt.Sprintf("round %d: worker %s is not in the pool's listing (no poll for two minutes, or it left); %s of %s cancelled, the member moves",
					st.Round, c.queue, c.activity, s.Members[c.member].Name))
			}
		}
	}
	return errs
}

// note records something that went wrong and was worked around.
func (st *State) note(msg string) {
	st.Notes = append(st.Notes, msg)
	st.Notes = st.Notes[max(0, len(st.Notes)-keepSummaries):]
}
