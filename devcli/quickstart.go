package devcli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/cli"
	"github.com/corl-project/corl/examples"
	"github.com/corl-project/corl/report"
)

func newQuickstartCmd(stdio cli.IO, getenv func(string) string) *cobra.Command {
	var (
		bf     cli.BackendFlags
		dir    string
		rounds int
	)
	cmd := &cobra.Command{
		Use:   "quickstart",
		Short: "Run a small built-in cohort end to end on an embedded Temporal server",
		Long: `Starts an embedded Temporal server, a worker and a local blob store, then runs
the built-in cohort (two small base models of different families, peer-ring
rewards, no labels) for 20 rounds as a durable workflow, printing progress,
the evaluation before and after, what training did to each member (paired
problem by problem, with McNemar's test), what each number means, and where
everything was written. About two minutes on 2 cores once built (the first
build compiles the embedded Temporal server: several minutes).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			be, err := bf.Open()
			if err != nil {
				return err
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(abs, 0o755); err != nil {
				return err
			}
			if err := examples.WriteBases(abs); err != nil {
				return fmt.Errorf("write base models: %w", err)
			}
			spec := filepath.Join(abs, "quickstart.yaml")
			if err := os.WriteFile(spec, examples.Quickstart(), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "corl quickstart: working in %s\n", abs)
			fmt.Fprintln(stdio.Out, "starting an embedded Temporal server (SQLite), a worker and a local blob store ...")
			e, err := start(ctx, devOptions{dir: abs, backend: be}, stdio, getenv)
			if err != nil {
				return err
			}
			defer e.stop()
			cl, err := dialRetry(ctx, e.conn)
			if err != nil {
				return err
			}
			defer cl.Close()
			// Base paths in the spec are relative to the working directory.
			wd, _ := os.Getwd()
			if err := os.Chdir(abs); err != nil {
				return err
			}
			defer os.Chdir(wd)
			rf := cli.RunFlags{SpecFlags: cli.SpecFlags{File: spec}, ID: fmt.Sprintf("corl-quickstart-%d", time.Now().Unix()), Heartbeat: 30, ScheduleToStart: 60}
			if rounds > 0 {
				rf.Sets = append(rf.Sets, fmt.Sprintf("rounds=%d", rounds))
			}
			start := time.Now()
			store, err := e.conn.OpenStore(ctx)
			if err != nil {
				return err
			}
			run, err := cli.StartRun(ctx, cl, store, "default", rf, getenv)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "started workflow %s on Temporal at %s\n", run.GetID(), e.srv.Addr())
			if err := cli.Watch(ctx, cl, run.GetID(), stdio.Out, time.Second); err != nil {
				return err
			}
			runs, err := report.FromTemporal(ctx, cl, store, run.GetID())
			if err != nil {
				return fmt.Errorf("read the run's evaluations back: %w", err)
			}
			if len(runs) == 1 {
				explainRun(stdio.Out, runs[0])
			}
			fmt.Fprintf(stdio.Out, "\ndone in %.0fs.\n  blob store (rollouts, grades, checkpoints): %s\n  Temporal database: %s\n  base models and spec: %s\n",
				time.Since(start).Seconds(), e.conn.Store.Local, filepath.Join(abs, "temporal.db"), abs)
			fmt.Fprintf(stdio.Out, "next: corl dev --dir %s, and in another terminal corl run -f %s --store-dir %s --wait\n",
				abs, spec, e.conn.Store.Local)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "corl-quickstart", "working directory")
	cmd.Flags().IntVar(&rounds, "rounds", 0, "override the number of rounds (default: the built-in spec's)")
	bf.Register(cmd.Flags(), getenv)
	return cmd
}
