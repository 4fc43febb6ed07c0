package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/workflows"
)

func newScheduleCmd(stdio IO, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Run a sweep on a schedule (Temporal Schedules): create, list, delete",
	}
	cmd.AddCommand(newScheduleCreateCmd(stdio, getenv), newScheduleListCmd(stdio, getenv), newScheduleDeleteCmd(stdio, getenv))
	return cmd
}

func newScheduleCreateCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var (
		cf    connFlags
		file  string
		id    string
		every time.Duration
	)
	create := &cobra.Command{
		Use:   "create",
		Short: "Start the sweep of a file every --every; a firing while the last one still runs is skipped",
		Long: `Creates a Temporal Schedule that starts the sweep (corl sweep's file format) every
--every. The overlap policy is skip: a firing while the previous sweep still
runs does nothing. Each firing's sweep gets its own workflow ID (the schedule
ID and the time), so its runs never share keys with another firing's.

The same with the Temporal CLI, from the sweep's JSON input:
  temporal schedule create --schedule-id nightly --interval 24h --overlap-policy Skip \
    --workflow-type Sweep --task-queue corl --workflow-id sweep-nightly --input-file sweep.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if every < time.Minute {
				return fmt.Errorf("--every %v: at least 1m", every)
			}
			in, cl, id, err := prepareSweep(cmd.Context(), &cf, file, id, getenv)
			if err != nil {
				return err
			}
			defer cl.Close()
			_, err = cl.ScheduleClient().Create(cmd.Context(), client.ScheduleOptions{
				ID:      id,
				Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
				Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
				Action: &client.ScheduleWorkflowAction{ID: id, Workflow: workflows.Sweep, Args: []any{*in},
					TaskQueue: pipeline.WorkflowQueue},
			})
			if err != nil {
				return fmt.Errorf("create schedule %s: %w", id, err)
			}
			fmt.Fprintf(stdio.Out, "schedule %s: sweep %s every %v (overlap: skip)\n", id, in.Name, every)
			return nil
		},
	}
	cf.register(create)
	create.Flags().StringVarP(&file, "file", "f", "", "sweep file (YAML)")
	create.Flags().StringVar(&id, "id", "", "schedule ID (default sweep-<name>)")
	create.Flags().DurationVar(&every, "every", 24*time.Hour, "interval between firings")
	return create
}

func newScheduleListCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var lf connFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List the schedules",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, _, err := lf.dial(getenv)
			if err != nil {
				return err
			}
			defer cl.Close()
			it, err := cl.ScheduleClient().List(cmd.Context(), client.ScheduleListOptions{})
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdio.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SCHEDULE\tWORKFLOW\tNEXT")
			for it.HasNext() {
				s, err := it.Next()
				if err != nil {
					return err
				}
				next := ""
				if len(s.NextActionTimes) > 0 {
					next = s.NextActionTimes[0].Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.ID, s.WorkflowType.Name, next)
			}
			return tw.Flush()
		},
	}
	lf.register(list)
	return list
}

func newScheduleDeleteCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var df connFlags
	del := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a schedule (runs it started go on)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, _, err := df.dial(getenv)
			if err != nil {
				return err
			}
			defer cl.Close()
			if err := cl.ScheduleClient().GetHandle(cmd.Context(), args[0]).Delete(cmd.Context()); err != nil {
				return fmt.Errorf("delete schedule %s: %w", args[0], err)
			}
			fmt.Fprintf(stdio.Out, "deleted schedule %s\n", args[0])
			return nil
		},
	}
	df.register(del)
	return del
}
