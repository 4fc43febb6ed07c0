package activities

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
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
	a.held[heldKey(in.RunKey(), ms.Name)] = &held{run: in.RunKey(), workflow: in.Run, member: m, round: round, stats: map[int]pipeline.UpdateOutput{}}
	a.Metrics.Holding(len(a.held))
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

// Workers lists the live GPU workers of the pool, from the pool queue's
// pollers (a worker's identity names its own queue and slots, see
// PoolIdentity), sorted by queue. Pollers not seen for two minutes are
// left out, and so are workers that recorded leaving the pool (Leave). Without a client, or on a server that does not answer, the
// list is empty and the workflow places through the pool queue.
func (a *Activities) Workers(ctx context.Context) ([]pipeline.WorkerInfo, error) {
	if a.Client == nil {
		return nil, nil
	}
	resp, err := a.Client.DescribeTaskQueue(ctx, pipeline.GPUPool, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", pipeline.GPUPool, err)
	}
	slots := map[string]int{}
	for _, p := range resp.GetPollers() {
		if t := p.GetLastAccessTime(); t != nil && time.Since(t.AsTime()) > 2*time.Minute {
			continue
		}
		q, n, ok := pipeline.ParsePoolIdentity(p.GetIdentity())
		if !ok {
			continue
		}
		if a.Store != nil {
			if b, err := a.Store.Get(ctx, pipeline.LeftKey(q)); err == nil && string(b) == p.GetIdentity() {
				continue
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
	a.forget(heldKey(ref.RunKey(), memberName(ref)))
	return nil
}

// forget drops a held member (a.mu held).
func (a *Activities) forget(key string) {
	delete(a.held, key)
	a.Metrics.Holding(len(a.held))
}

// reclaimClosed forgets the members of runs that the server says are closed
// (completed, failed, cancelled, terminated, timed out) or does not know,
// and returns how many it forgot. A run that continued as new is open (its
// workflow ID's newest run is running). When the server cannot be asked,
// nothing is forgotten. a.mu must be held.
func (a *Activities) reclaimClosed(ctx context.Context) int {
	if a.Client == nil {
		return 0
	}
	open := map[string]bool{}
	n := 0
	for k, h := range a.held {
		if h.workflow == "" {
			continue
		}
		isOpen, asked := open[h.workflow]
		if !asked {
			desc, err := a.Client.DescribeWorkflowExecution(ctx, h.workflow, "")
			var nf *serviceerror.NotFound
			switch {
			case errors.As(err, &nf):
				isOpen = false
			case err != nil:
				isOpen = true // cannot tell: keep it
			default:
				isOpen = desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
			}
			open[h.workflow] = isOpen
		}
		if !isOpen {
			if activity.IsActivity(ctx) {
				activity.GetLogger(ctx).Info("released a member of a closed run", "run", h.run, "member", h.member.Name)
			}
			a.forget(k)
			n++
		}
	}
	return n
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
