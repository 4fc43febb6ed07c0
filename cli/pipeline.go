package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/cohort"
	"github.com/corl-project/corl/config"
	"github.com/corl-project/corl/metrics"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/workers"
	"github.com/corl-project/corl/workflows"
)

func newWorkerCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var (
		cf      connFlags
		pools   []string
		bf      BackendFlags
		queueID string
		mAddr   string
		slots   int
	)
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Serve a worker pool: gpu (generate, update, evaluate) and/or cpu (grading, workflows)",
		Long: `Connects to Temporal and serves activities until interrupted. A gpu worker
holds cohort members on its device and serves them on its own task queue; on
SIGTERM (a spot notice) it finishes the running activity, checkpoints the
members it holds to the blob store, and exits. --queue-id keeps the worker's
own queue name across restarts of the same machine, so a restarted worker
takes over its queue at once. A run spreads its members over the pool's gpu
workers, up to --slots members each, and members share a worker only when
every worker's slots are taken.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if slots < 1 {
				return fmt.Errorf("--slots: must be at least 1, got %d", slots)
			}
			be, err := bf.Open()
			if err != nil {
				return err
			}
			reg, err := metrics.Open(cmd.Context(), mAddr, stdio.Err)
			if err != nil {
				return err
			}
			if reg != nil {
				cf.metrics = reg.SDK()
			}
			cl, _, store, err := cf.connect(cmd.Context(), getenv)
			if err != nil {
				return err
			}
			defer cl.Close()
			o := workers.Options{Client: cl, Store: store, Backend: be, Pools: pools, Log: stdio.Err, QueueID: queueID, Slots: slots}
			if reg != nil {
				o.Metrics = reg.Corl
			}
			return workers.Run(cmd.Context(), o)
		},
	}
	cf.register(cmd)
	fl := cmd.Flags()
	fl.StringSliceVar(&pools, "pool", []string{"gpu", "cpu"}, "pools to serve: gpu, cpu")
	bf.Register(fl, getenv)
	fl.StringVar(&queueID, "queue-id", "", "stable name for this worker's own queue (default: random per process)")
	fl.IntVar(&slots, "slots", 1, "members this worker takes before a run places others elsewhere (one per device; more only with room for several models)")
	fl.StringVar(&mAddr, "metrics", "", "serve Prometheus metrics (SDK and corl's) on this host:port at /metrics (port 0: any free one)")
	return cmd
}

// searchAttributesRegistered reports whether the namespace knows corl's
// search attributes (the dev server registers them; other clusters need
// `temporal operator search-attribute create`).
func searchAttributesRegistered(ctx context.Context, cl client.Client, ns string) bool {
	resp, err := cl.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return false
	}
	for name := range workflows.SearchAttributeTypes {
		if _, ok := resp.GetCustomAttributes()[name]; !ok {
			return false
		}
	}
	return true
}

// RunFlags say which spec to start and how.
type RunFlags struct {
	SpecFlags
	ID              string
	Heartbeat       int // seconds
	ScheduleToStart int // seconds
}

func (f *RunFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	f.SpecFlags.Register(fl)
	fl.StringVar(&f.ID, "id", "", "workflow ID (default corl-<name>)")
	fl.IntVar(&f.Heartbeat, "heartbeat-timeout", 0, "seconds without a heartbeat before an activity's worker counts as lost (default 60)")
	fl.IntVar(&f.ScheduleToStart, "schedule-to-start-timeout", 0, "seconds a member's queue may go unpolled before the member moves (default 300)")
}

// StartRun starts the CohortRun workflow for a spec. With a store, members
// whose base is a directory here are uploaded to it first (content-addressed:
// an unchanged model is not sent twice) and named by blob reference, so
// workers on other machines need only the store.
func StartRun(ctx context.Context, cl client.Client, store blob.Store, ns string, rf RunFlags, getenv func(string) string) (client.WorkflowRun, error) {
	spec, err := rf.Load(getenv)
	if err != nil {
		return nil, err
	}
	return startSpec(ctx, cl, store, ns, spec, rf)
}

// startSpec is StartRun for a spec already loaded from rf.
func startSpec(ctx context.Context, cl client.Client, store blob.Store, ns string, spec *config.RunSpec, rf RunFlags) (client.WorkflowRun, error) {
	// What the first generation would fail on is refused here, per member,
	// while the bases are still directories (a data file only the workers
	// can read is checked where they load it).
	if _, err := os.Stat(spec.Data.File); spec.Data.File == "" || err == nil {
		data, err := cohort.LoadData(spec)
		if err != nil {
			return nil, err
		}
		if err := cohort.CheckMembers(spec, data); err != nil {
			return nil, err
		}
	}
	if err := uploadBases(ctx, store, spec); err != nil {
		return nil, err
	}
	id := rf.ID
	if id == "" {
		id = "corl-" + spec.Name
	}
	in := workflows.Input{RunSpec: *spec, HeartbeatTimeout: rf.Heartbeat, ScheduleToStartLimit: rf.ScheduleToStart}
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: pipeline.WorkflowQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL}
	if searchAttributesRegistered(ctx, cl, ns) {
		in.UseSearchAttributes = true
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(workflows.AttrRun.ValueSet(spec.Name),
			workflows.AttrReward.ValueSet(spec.Reward.Mode), workflows.AttrCohort.ValueSet(spec.MemberNames()), workflows.AttrRound.ValueSet(0))
	}
	run, err := cl.ExecuteWorkflow(ctx, opts, workflows.CohortRun, in)
	if err != nil {
		return nil, fmt.Errorf("start run %s: %w", id, err)
	}
	return run, nil
}

// uploadBases stores members' local base directories in the blob store
// (content-addressed) and points the spec at them, so workers need only
// the store.
func uploadBases(ctx context.Context, store blob.Store, s *config.RunSpec) error {
	for i, m := range s.Members {
		if st, err := os.Stat(m.Base); store == nil || err != nil || !st.IsDir() {
			continue
		}
		key, err := blob.UploadDir(ctx, store, m.Base)
		if err != nil {
			return fmt.Errorf("members[%d].base: upload %s: %w", i, m.Base, err)
		}
		s.Members[i].Base = blob.BlobRef + key
	}
	return nil
}

func newRunCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var (
		cf   connFlags
		rf   RunFlags
		wait bool
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Start a cohort run as a Temporal workflow",
		Long: `Starts the CohortRun workflow for a run spec. Workers (corl worker, or corl dev)
execute it. The same workflow starts from the Temporal CLI with the spec as JSON:
  temporal workflow start --type CohortRun --task-queue corl --input-file spec.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A bad spec is answered before any connection is tried.
			spec, err := rf.Load(getenv)
			if err != nil {
				return err
			}
			cl, conn, store, err := cf.connect(cmd.Context(), getenv)
			if err != nil {
				return err
			}
			defer cl.Close()
			run, err := startSpec(cmd.Context(), cl, store, conn.Temporal.Namespace, spec, rf)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "started %s (run %s)\nwatch it: corl watch %s\n", run.GetID(), run.GetRunID(), run.GetID())
			if !wait {
				return nil
			}
			return Watch(cmd.Context(), cl, run.GetID(), stdio.Out, time.Second)
		},
	}
	cf.register(cmd)
	rf.register(cmd)
	cmd.Flags().BoolVar(&wait, "wait", false, "watch the run until it ends")
	return cmd
}
