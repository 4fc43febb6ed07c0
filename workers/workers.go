package workers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corl-project/corl/activities"
	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/metrics"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/workflows"
)

// Pools a worker process can serve.
const (
	PoolGPU = "gpu"
	PoolCPU = "cpu"
)

// Options configure a worker process.
type Options struct {
	Client  client.Client
	Store   blob.Store
	Backend gpu.Backend
	Pools   []string // gpu, cpu or both
	Log     io.Writer
	// QueueID names this worker's own queue across restarts (default: a
	// fresh random name per process).
	QueueID string
	// Metrics records corl's own Prometheus metrics (nil: off).
	Metrics *metrics.Corl
	// Slots is how many members this GPU worker takes while other workers
	// have room (0: one, the device's single stream). Members beyond every
	// worker's slots share the least loaded worker.
	Slots int
	// ReclaimEvery is how often an idle GPU worker asks the server whether
	// the runs of the members it holds are still open, and forgets those
	// that are not (0: every minute). Placement does the same.
	ReclaimEvery time.Duration
}

// OwnQueue returns a fresh worker-specific queue name.
func OwnQueue() string {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%s-%d-%s", pipeline.GPUPool, host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Run serves the pools until ctx is cancelled, then shuts down gracefully:
// in-flight activities finish (up to a minute), held members are
// checkpointed, and Run returns.
func Run(ctx context.Context, o Options) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	queue := OwnQueue()
	if o.QueueID != "" {
		queue = pipeline.GPUPool + "-" + o.QueueID
	}
	sweepTemp(o)
	acts := activities.New(o.Store, o.Backend, queue)
	acts.Metrics, acts.Client, acts.Slots = o.Metrics, o.Client, max(o.Slots, 1)
	var ws []worker.Worker
	identity := pipeline.PoolIdentity(queue, acts.Slots)
	gpu := false
	start := func(q string, register func(worker.Worker)) error {
		opts := worker.Options{WorkerStopTimeout: time.Minute, MaxConcurrentActivityExecutionSize: 4}
		if q == pipeline.GPUPool {
			// The workflow reads the pool's queues and slots from its
			// pollers. Placements wait for the device in the activity, so
			// the pool queue takes many at once: a worker that stopped
			// polling would look gone.
			opts.Identity = identity
			opts.MaxConcurrentActivityExecutionSize = 64
		}
		w := worker.New(o.Client, q, opts)
		register(w)
		if err := w.Start(); err != nil {
			return fmt.Errorf("worker on %s: %w", q, err)
		}
		ws = append(ws, w)
		return nil
	}
	for _, p := range o.Pools {
		switch p {
		case PoolGPU:
			reg := func(w worker.Worker) { w.RegisterActivity(acts) }
			if err := start(pipeline.GPUPool, reg); err != nil {
				return err
			}
			if err := start(queue, reg); err != nil {
				return err
			}
			fmt.Fprintf(o.Log, "gpu worker on %s and %s (backend %s, %d slot(s))\n", pipeline.GPUPool, queue, o.Backend.Name(), acts.Slots)
			gpu = true
		case PoolCPU:
			if err := start(pipeline.CPUPool, func(w worker.Worker) { w.RegisterActivity(acts) }); err != nil {
				return err
			}
			if err := start(pipeline.WorkflowQueue, func(w worker.Worker) {
				w.RegisterWorkflowWithOptions(workflows.CohortRun, workflow.RegisterOptions{Name: pipeline.CohortRunWorkflow})
				w.RegisterWorkflowWithOptions(workflows.Sweep, workflow.RegisterOptions{Name: pipeline.SweepWorkflow})
				// The workflow's first step, a local activity it names.
				w.RegisterActivityWithOptions(activities.ValidateSpec, activity.RegisterOptions{Name: pipeline.ValidateSpec})
			}); err != nil {
				return err
			}
			fmt.Fprintf(o.Log, "cpu worker on %s and %s\n", pipeline.CPUPool, pipeline.WorkflowQueue)
		default:
			return fmt.Errorf("--pool: %q is not gpu or cpu", p)
		}
	}
	if gpu {
		go reclaim(ctx, o, acts)
		go beat(ctx, o, acts, identity)
	}
	<-ctx.Done()
	return stop(o, acts, ws, gpu, identity)
}

// sweepTemp removes from a local store what writers killed before this
// start left half-written.
func sweepTemp(o Options) {
	l, ok := o.Store.(blob.Local)
	if !ok {
		return
	}
	if gone, err := l.SweepTemp(time.Hour, false); err != nil {
		fmt.Fprintf(o.Log, "sweeping the store's temporary files: %v\n", err)
	} else if len(gone) > 0 {
		fmt.Fprintf(o.Log, "removed %d temporary files that killed writers left in the store\n", len(gone))
	}
}

// reclaim releases, every o.ReclaimEvery (a minute), the members of runs
// that ended without releasing them here, until ctx ends.
func reclaim(ctx context.Context, o Options, acts *activities.Activities) {
	every := o.ReclaimEvery
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n := activities.ReclaimClosed(ctx, acts); n > 0 {
				fmt.Fprintf(o.Log, "released %d member(s) of runs that have ended\n", n)
			}
		}
	}
}

// beat records that this GPU worker is alive every pipeline.AliveEvery,
// from its start until ctx ends, so that the pool's listing drops it soon
// after it is killed. A record that cannot be written is said once per
// failing spell; the listing then falls back to the server's.
func beat(ctx context.Context, o Options, acts *activities.Activities, identity string) {
	t := time.NewTicker(pipeline.AliveEvery)
	defer t.Stop()
	failing := false
	for {
		err := activities.Beat(ctx, acts, identity)
		if err != nil && !failing && ctx.Err() == nil {
			fmt.Fprintf(o.Log, "cannot record that this worker is alive (%s): %v\n", pipeline.AliveKey(acts.Queue), err)
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// stop is a stop notice's work: the workers finish their activities, every
// held member is checkpointed, and a GPU worker records leaving the pool.
func stop(o Options, acts *activities.Activities, ws []worker.Worker, gpu bool, identity string) error {
	fmt.Fprintln(o.Log, "stop notice: finishing running activities")
	for _, w := range ws {
		w.Stop()
	}
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	errs := activities.CheckpointAll(cctx, acts)
	if gpu {
		// Leave the pool now rather than when the server forgets this
		// worker's last poll (two minutes): placements pass it over.
		if err := activities.Leave(cctx, acts, identity); err != nil {
			fmt.Fprintf(o.Log, "could not record leaving the pool (placements will wait for the server to forget this worker): %v\n", err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	fmt.Fprintln(o.Log, "held members checkpointed; worker left the pool; exiting")
	return nil
}
