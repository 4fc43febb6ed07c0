package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/cohort"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/pipeline"
)

// Acquire loads a member on this worker and returns this worker's queue. It
// starts from the newest complete checkpoint at or after the recorded one
// (a worker that got a stop notice may have written a newer one), else the
// recorded checkpoint, else the base.
func (a *Activities) Acquire(ctx context.Context, in pipeline.AcquireInput) (pipeline.AcquireOutput, error) {
	defer a.exclusive(ctx, fmt.Sprintf("acquire %s at round %d", memberName(in.MemberRef), in.Round))()
	// Members of runs that ended where no Release reached this worker (a
	// terminated or timed-out run, a release lost with the network) are
	// not load and not memory to keep.
	a.reclaimClosed(ctx)
	s := &in.Spec
	if in.WithinSlots {
		if others := a.heldOtherThan(heldKey(in.RunKey(), s.Members[in.Member].Name)); others >= max(a.Slots, 1) {
			return pipeline.AcquireOutput{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("worker %s holds %d members in %d slots", a.Queue, others, max(a.Slots, 1)), pipeline.ErrWorkerFull, nil)
		}
	}
	if _, err := a.runData(s); err != nil {
		return pipeline.AcquireOutput{}, err
	}
	ms := s.Members[in.Member]
	key, round := in.CheckpointKey, in.CheckpointRound
	for r := in.Round; r > in.CheckpointRound; r-- {
		k := blob.ManifestKey(blob.CheckpointPrefix(in.RunKey(), r, ms.Name))
		if _, err := a.Store.Get(ctx, k); err == nil {
			key, round = k, r
			break
		}
	}
	var dir, source, note string
	for dir == "" {
		if key == "" {
			base, src, cleanup, err := blob.Materialize(ctx, a.Store, ms.Base)
			if err != nil {
				return pipeline.AcquireOutput{}, badSpec(fmt.Errorf("member %s: base %s: %w", ms.Name, ms.Base, err))
			}
			defer cleanup()
			dir, source, round = base, src, 0
			break
		}
		tmp, src, cleanup, err := blob.Materialize(ctx, a.Store, blob.BlobRef+key)
		if errors.Is(err, blob.ErrCorrupt) {
			// Reading it again cannot help: restore the newest older
			// checkpoint (or the base) and let the workflow replay from there.
			bad := key
			key, round = a.olderCheckpoint(ctx, in.RunKey(), ms.Name, round)
			note = fmt.Sprintf("member %s: %v; restored %s instead", ms.Name, err, cmp.Or(key, "the base"))
			activity.GetLogger(ctx).Warn("corrupt checkpoint", "key", bad, "error", err, "fallback", key)
			continue
		}
		if err != nil {
			return pipeline.AcquireOutput{}, err
		}
		defer cleanup()
		dir, source = tmp, src
	}
	// A member larger than this device can ever hold fails the run, naming
	// what to change; the plan is in the worker's log either way.
	if d, err := cohort.LoadData(s); err == nil {
		if _, rows, err := cohort.PlanMember(a.Backend, s, ms, dir, d); err == nil {
			activity.GetLogger(ctx).Info("memory plan", "run", in.RunKey(), "member", ms.Name, "bytes", model.PlanBytes(rows))
			if err := cohort.CheckMemberFits(a.Backend, ms.Name, rows); err != nil {
				return pipeline.AcquireOutput{}, badSpec(err)
			}
		}
	}
	m, err := cohort.LoadMember(a.Backend, ms, dir, false)
	if err != nil {
		return pipeline.AcquireOutput{}, badSpec(namedAs(err, dir, source))
	}
	for _, w := range m.Model.Warnings {
		note = strings.TrimPrefix(note+"; ", "; ") + fmt.Sprintf("member %s: %v", ms.Name, namedAs(errors.New(w), dir, source))
	}
	if s.GRPO.Beta > 0 { // the KL reference is always the base
		base, src, cleanup, err := blob.Materialize(ctx, a.Store, ms.Base)
		if err != nil {
			return pipeline.AcquireOutput{}, badSpec(err)
		}
		defer cleanup()
		if m.Ref, err = model.LoadHF(a.Backend, base); err != nil {
			return pipeline.AcquireOutput{}, badSpec(namedAs(err, base, src))
		}
	}
	a.held[heldKey(in.RunKey(), ms.Name)] = &held{run: in.RunKey(), workflow: in.Run, execution: placedBy(ctx, in.Run),
		member: m, round: round, stats: map[int]pipeline.UpdateOutput{}}
	a.holding(ctx)
	activity.GetLogger(ctx).Info("acquired member", "run", in.RunKey(), "member", ms.Name, "round", round, "from", key)
	a.Metrics.Placed(in.RunKey(), ms.Name)
	return pipeline.AcquireOutput{Queue: a.Queue, Round: round, CheckpointKey: key, Note: note}, nil
}

// heldOtherThan counts the members held under keys other than key.
func (a *Activities) heldOtherThan(key string) int {
	n := 0
	for k := range a.held {
		if k != key {
			n++
		}
	}
	return n
}

// Workers lists the live GPU workers of the pool (ListPool). Without a
// client the list is empty and the workflow places through the pool queue.
func (a *Activities) Workers(ctx context.Context) ([]pipeline.WorkerInfo, error) {
	if a.Client == nil {
		return nil, nil
	}
	return ListPool(ctx, a.Client, a.Store)
}

// ListPool lists the live GPU workers of the pool, from the pool queue's
// pollers (a worker's identity names its own queue and slots, see
// PoolIdentity), sorted by queue. Pollers not seen for PollerMemory are
// left out, and so are, in store (nil: not asked), workers that recorded
// leaving the pool (Leave) and workers whose record that they are alive
// (Beat) is older than AliveFor.
func ListPool(ctx context.Context, cl client.Client, store blob.Store) ([]pipeline.WorkerInfo, error) {
	resp, err := cl.DescribeTaskQueue(ctx, pipeline.GPUPool, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", pipeline.GPUPool, err)
	}
	slots := map[string]int{}
	for _, p := range resp.GetPollers() {
		if t := p.GetLastAccessTime(); t != nil && time.Since(t.AsTime()) > pipeline.PollerMemory {
			continue
		}
		q, n, ok := pipeline.ParsePoolIdentity(p.GetIdentity())
		if !ok {
			continue
		}
		if store != nil {
			if b, err := store.Get(ctx, pipeline.LeftKey(q)); err == nil && string(b) == p.GetIdentity() {
				continue
			}
			if b, err := store.Get(ctx, pipeline.AliveKey(q)); err == nil {
				var a pipeline.Alive
				if json.Unmarshal(b, &a) == nil && a.Identity == p.GetIdentity() && time.Since(a.At) > pipeline.AliveFor {
					continue
				}
			}
		}
		slots[q] = max(slots[q], n)
	}
	out := make([]pipeline.WorkerInfo, 0, len(slots))
	for q, n := range slots {
		out = append(out, pipeline.WorkerInfo{Queue: q, Slots: n})
	}
	slices.SortFunc(out, func(x, y pipeline.WorkerInfo) int { return strings.Compare(x.Queue, y.Queue) })
	return out, nil
}

// Beat records in the store that the worker polling the pool with identity
// is alive (see pipeline.AliveFor).
func Beat(ctx context.Context, a *Activities, identity string) error {
	if a.Store == nil {
		return nil
	}
	b, err := json.Marshal(pipeline.Alive{Identity: identity, At: time.Now().UTC()})
	if err != nil {
		return err
	}
	return a.Store.Put(ctx, pipeline.AliveKey(a.Queue), b)
}

// Leave records in the store that the worker polling the pool with identity
// has stopped, so that Workers leaves it out at once. The server keeps a
// poller listed for a while after its last poll; a clean shutdown should
// not look like a live worker. (A function: see ReclaimClosed.)
func Leave(ctx context.Context, a *Activities, identity string) error {
	if a.Store == nil {
		return nil
	}
	return a.Store.Put(ctx, pipeline.LeftKey(a.Queue), []byte(identity))
}

// olderCheckpoint is the manifest key and round of the member's newest
// checkpoint before round ("", 0: none, the base).
func (a *Activities) olderCheckpoint(ctx context.Context, run, member string, round int) (string, int) {
	for r := round - 1; r >= 1; r-- {
		k := blob.ManifestKey(blob.CheckpointPrefix(run, r, member))
		if _, err := a.Store.Get(ctx, k); err == nil {
			return k, r
		}
	}
	return "", 0
}

// Release forgets the member of an ended run (its checkpoints are stored).
func (a *Activities) Release(ctx context.Context, ref pipeline.MemberRef) error {
	defer a.exclusive(ctx, "release "+memberName(ref))()
	if k := heldKey(ref.RunKey(), memberName(ref)); a.held[k] != nil {
		a.forget(k)
		a.holding(ctx)
	}
	return nil
}

// forget drops a held member (a.mu held); holding then tells of it.
func (a *Activities) forget(key string) { delete(a.held, key) }

// holding tells what a holds now: the corl_members_held gauge, and the
// store's record (pipeline.HoldingKey) that `corl status` shows. A store
// that cannot be written loses only the record (a.mu held).
func (a *Activities) holding(ctx context.Context) {
	a.Metrics.Holding(len(a.held))
	if a.Store == nil {
		return
	}
	h := pipeline.Holding{Queue: a.Queue, Slots: max(a.Slots, 1), Members: []pipeline.HeldMember{}, At: time.Now().UTC()}
	for _, m := range a.held {
		h.Members = append(h.Members, pipeline.HeldMember{Run: m.run, Member: m.member.Name})
	}
	slices.SortFunc(h.Members, func(x, y pipeline.HeldMember) int {
		return cmp.Or(strings.Compare(x.Run, y.Run), strings.Compare(x.Member, y.Member))
	})
	b, err := json.Marshal(h)
	if err == nil {
		err = a.Store.Put(ctx, pipeline.HoldingKey(a.Queue), b)
	}
	if err != nil && activity.IsActivity(ctx) {
		activity.GetLogger(ctx).Warn("cannot record the members held", "key", pipeline.HoldingKey(a.Queue), "error", err)
	}
}

// reclaimClosed forgets the members of runs that the server says are closed
// (completed, failed, cancelled, terminated, timed out) or does not know,
// and returns how many it forgot. A run that continued as new is open while
// its chain's newest run is running; a run started again under the same
// workflow ID (a terminated run's spec run once more) is another run, and
// the old run's members are not its. When the server cannot be asked,
// nothing is forgotten. a.mu must be held.
func (a *Activities) reclaimClosed(ctx context.Context) int {
	if a.Client == nil {
		return 0
	}
	open := map[[2]string]bool{}
	n := 0
	for k, h := range a.held {
		if h.workflow == "" {
			continue
		}
		run := [2]string{h.workflow, h.execution}
		isOpen, asked := open[run]
		if !asked {
			isOpen = a.runOpen(ctx, h.workflow, h.execution)
			open[run] = isOpen
		}
		if !isOpen {
			if activity.IsActivity(ctx) {
				activity.GetLogger(ctx).Info("released a member of a closed run", "run", h.run, "member", h.member.Name)
			}
			a.forget(k)
			n++
		}
	}
	if n > 0 {
		a.holding(ctx)
	}
	return n
}

// runOpen says whether the run that placed a member is still running:
// execution itself, or, when it continued as new, the newest run of its
// chain (the same first run). Without execution, the workflow ID's newest
// run is asked about. When the server cannot tell, the run is open.
func (a *Activities) runOpen(ctx context.Context, workflow, execution string) bool {
	status := func(runID string) (*workflowpb.WorkflowExecutionInfo, bool) {
		desc, err := a.Client.DescribeWorkflowExecution(ctx, workflow, runID)
		var nf *serviceerror.NotFound
		switch {
		case errors.As(err, &nf):
			return nil, false
		case err != nil:
			return nil, true // cannot tell: keep it
		}
		return desc.GetWorkflowExecutionInfo(), true
	}
	info, ok := status(execution)
	if info == nil {
		return ok
	}
	switch st := info.GetStatus(); {
	case st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return true
	case st != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW || execution == "":
		return false
	}
	newest, ok := status("")
	if newest == nil {
		return ok
	}
	return newest.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING &&
		(info.GetFirstRunId() == "" || newest.GetFirstRunId() == info.GetFirstRunId())
}

// placedBy is the workflow run ID of the activity's caller when it is the
// run named workflow ("" otherwise: a caller outside a workflow).
func placedBy(ctx context.Context, workflow string) string {
	if !activity.IsActivity(ctx) {
		return ""
	}
	if we := activity.GetInfo(ctx).WorkflowExecution; we.ID == workflow {
		return we.RunID
	}
	return ""
}

// ReclaimClosed is reclaimClosed for a worker's idle moments: it waits for
// nothing (a busy device means the worker is in use; it tries again later).
// (A function, not a method: every method of Activities is registered as an
// activity.)
func ReclaimClosed(ctx context.Context, a *Activities) int {
	if !a.mu.TryLock() {
		return 0
	}
	defer a.mu.Unlock()
	return a.reclaimClosed(ctx)
}

// Held is how many members a holds. (A function: see ReclaimClosed.)
func Held(a *Activities) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.held)
}
