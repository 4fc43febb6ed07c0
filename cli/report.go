package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/corl-project/corl/connect"
	"github.com/corl-project/corl/report"
)

// reportFlags are corl report's flags.
type reportFlags struct {
	out, md, csv, js, member, records string
	where, contrasts                  []string
	contrastsMD, contrastsJSON        string
	equivalence                       float64
	completeOnly, pairedSeeds         bool
	atRound                           int
	cf                                connFlags
}

const reportLong = `Reads runs and writes one HTML file that opens
offline: a table with one row per method (Base, Ground-truth, Self-vote,
Entropy, Self-certainty, Co-RL by cohort make-up) and a column per task
family, mean and 95% interval over seeds (runs that differ only in seed
are one method); plots of pass@1 against round and against cumulative
FLOPs with interval bands, answer entropy and distinct answers (collapse),
pseudo-label accuracy; and the members' agreement. The table is also
printed here, and written as Markdown, CSV and JSON on request.

Each argument is a run directory (<output_dir>/<name>, as corl train
--local writes it: spec.json and metrics.jsonl), a results directory
holding runs.jsonl.gz (what --records writes: results/<name>/ commits
it, so its numbers can be redrawn offline), or, when no such directory
exists, a workflow ID on the Temporal server: a run (corl run) or a sweep
(corl sweep: every cell that has been evaluated). Runs on the server are
read from their workflow histories, so a report can be drawn while they
are still going.

Examples:
  corl report runs/gt-seed1 runs/gt-seed2 runs/coRL-seed1 -o report.html --md report.md
  corl report my-sweep -o sweep.html --records results/mine/runs.jsonl.gz
  corl report results/mine -o again.html
  corl report results/study --member m -o "" --contrast "peer - copy|m + peer|m + m-copy"`

func newReportCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report RUN|SWEEP|DIR... [-o report.html]",
		Short: "One self-contained HTML report (and Markdown, CSV, JSON tables) of finished runs",
		Long:  reportLong,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := loadReportRuns(cmd.Context(), stdio, args, f.cf, getenv)
			if err != nil {
				return err
			}
			if runs, err = selectRuns(stdio, runs, f.completeOnly, f.where); err != nil {
				return err
			}
			runs, dropped := report.Distinct(runs)
			if dropped > 0 {
				fmt.Fprintf(stdio.Err, "%d run(s) read twice (the same spec from two sources) counted once\n", dropped)
			}
			if cmd.Flags().Changed("at-round") {
				if f.records != "" {
					return fmt.Errorf("--at-round with --records: the records would hold runs cut short; write them without --at-round")
				}
				if runs, err = report.AtRound(runs, f.atRound); err != nil {
					return fmt.Errorf("--at-round: %w", err)
				}
			}
			return f.write(stdio, runs)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "out", "o", "report.html", "HTML file to write (empty: none)")
	fl.StringVar(&f.md, "md", "", "also write the table as Markdown")
	fl.StringVar(&f.csv, "csv", "", "also write the table as CSV")
	fl.StringVar(&f.js, "json", "", "also write the table as JSON")
	fl.StringVar(&f.records, "records", "", "also write every run's records (spec, rounds, evaluations with per-problem outcomes) as gzipped JSON lines; name it "+report.RecordsName+" in a results directory, and corl report DIR redraws everything from it offline")
	fl.BoolVar(&f.completeOnly, "complete", false, "only runs that completed (a sweep in progress: its finished cells, whose records a later sweep --recorded then skips)")
	fl.StringVar(&f.member, "member", "", "score only this member in the table (the member the compared runs share, e.g. the model every method trains); runs without it are left out. A comma-separated list scores in each run the first of them it has (studies whose cohorts train different models)")
	fl.StringArrayVar(&f.contrasts, "contrast", nil, "a planned contrast NAME|A|B (repeatable; a side naming several rows separated by ';' is their mean, a pooled contrast): A - B with the table's interval, p raw, Holm over the whole table and over the planned contrasts alone, and the minimum detectable difference; A and B name rows by the end of their method labels (e.g. 'init seed - copy|nat-llama-init2|nat-llama-copy')")
	fl.StringVar(&f.contrastsMD, "contrasts-md", "", "also write the planned contrasts as Markdown")
	fl.StringVar(&f.contrastsJSON, "contrasts-json", "", "also write the planned contrasts as JSON (with each one's SE and degrees of freedom: what corl pool reads)")
	fl.BoolVar(&f.pairedSeeds, "paired-seeds", false, "compare two methods seed by seed where both ran the same seeds (one seed: one base evaluation draw and one data order in every method), so the seeds' shared effect cancels; pooled contrasts too; methods on other seeds stay unpaired")
	fl.IntVar(&f.atRound, "at-round", 0, "score every run at its evaluation at this round (its rounds after it left out: FLOPs, seconds and collapse too), e.g. the lead at round 20 of runs that went on to 100; a run without an evaluation there is an error")
	fl.Float64Var(&f.equivalence, "equivalence", 0, "also test each planned contrast for equivalence within +-this margin (two one-sided tests, Holm over the contrasts); 0: no test")
	fl.StringArrayVar(&f.where, "where", nil, "keep only runs whose setting KEY matches REGEXP (KEY=REGEXP, repeatable; keys are spec paths such as reward.mode or rounds, and members: the members' names joined by \" + \", e.g. --where 'members=^m \\+ [^+]+$' for two-member cohorts of m)")
	f.cf.register(cmd)
	return cmd
}

// write prints the table (and the planned contrasts) and writes the files
// the flags ask for.
func (f *reportFlags) write(stdio IO, runs []*report.Run) error {
	var planned []report.Contrast
	for _, c := range f.contrasts {
		pc, err := report.ParseContrast(c)
		if err != nil {
			return fmt.Errorf("--contrast: %w", err)
		}
		planned = append(planned, pc)
	}
	t := report.BuildTableWith(runs, f.member, report.Options{PairedSeeds: f.pairedSeeds})
	fmt.Fprint(stdio.Out, t.Markdown())
	if len(planned) > 0 {
		rows, err := report.Planned(t, planned)
		if err != nil {
			return fmt.Errorf("--contrast: %w", err)
		}
		if f.equivalence < 0 {
			return fmt.Errorf("--equivalence: %v: want a margin above 0 (or 0: no test)", f.equivalence)
		}
		if f.equivalence > 0 {
			report.Equivalence(rows, f.equivalence)
		}
		md := report.PlannedMarkdown(rows)
		fmt.Fprint(stdio.Out, "\n"+md)
		if f.contrastsMD != "" {
			if err := os.WriteFile(f.contrastsMD, []byte(md), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Err, "wrote %s\n", f.contrastsMD)
		}
		if f.contrastsJSON != "" {
			js, _ := json.MarshalIndent(rows, "", "  ")
			if err := os.WriteFile(f.contrastsJSON, append(js, '\n'), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Err, "wrote %s\n", f.contrastsJSON)
		}
	}
	page, err := report.HTML(runs, t)
	if err != nil {
		return err
	}
	if f.records != "" {
		if err := report.SaveRecords(f.records, runs); err != nil {
			return err
		}
		fmt.Fprintf(stdio.Err, "wrote %s (%d runs: corl report on its directory redraws this report)\n", f.records, len(runs))
	}
	js, _ := json.MarshalIndent(t, "", "  ")
	for _, w := range []struct{ path, body string }{{f.out, page}, {f.md, t.Markdown()}, {f.csv, t.CSV()}, {f.js, string(js) + "\n"}} {
		if w.path == "" {
			continue
		}
		if err := os.WriteFile(w.path, []byte(w.body), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdio.Err, "wrote %s\n", w.path)
	}
	return nil
}

// loadReportRuns reads each argument as a run directory, a results
// directory, or a workflow ID on the Temporal server (a run or a sweep).
func loadReportRuns(ctx context.Context, stdio IO, args []string, cf connFlags, getenv func(string) string) ([]*report.Run, error) {
	var runs []*report.Run
	var cl client.Client
	var conn *connect.Connection
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for _, arg := range args {
		if st, err := os.Stat(arg); err == nil && st.IsDir() {
			rs, err := report.LoadDir(arg)
			if err != nil {
				return nil, err
			}
			runs = append(runs, rs...)
			continue
		}
		if cl == nil {
			var err error
			if cl, conn, err = cf.dial(getenv); err != nil {
				return nil, fmt.Errorf("%s is not a run directory, and reading it as a workflow ID: %w", arg, err)
			}
		}
		// The runs' records, and uploaded bases' families (same or
		// different family), are in the blob store.
		store, err := conn.OpenStore(ctx)
		if err != nil {
			fmt.Fprintf(stdio.Err, "warning: blob store: %v (records are rebuilt from the workflow histories; cohorts of uploaded bases are named by their bases, not their families)\n", err)
			store = nil
		}
		rs, err := report.FromTemporal(ctx, cl, store, arg)
		if err != nil {
			return nil, err
		}
		if store != nil {
			report.ReadFamilies(ctx, store, rs)
		}
		runs = append(runs, rs...)
	}
	return runs, nil
}

// selectRuns keeps the completed runs (completeOnly) and those matching
// every --where condition (KEY=REGEXP on a run's settings).
func selectRuns(stdio IO, runs []*report.Run, completeOnly bool, where []string) ([]*report.Run, error) {
	if completeOnly {
		kept := runs[:0]
		for _, r := range runs {
			if r.Complete {
				kept = append(kept, r)
			}
		}
		fmt.Fprintf(stdio.Err, "%d of %d run(s) completed: reporting those\n", len(kept), len(runs))
		if runs = kept; len(runs) == 0 {
			return nil, fmt.Errorf("--complete: no run has completed")
		}
	}
	if len(where) > 0 {
		conds := map[string]*regexp.Regexp{}
		for _, w := range where {
			k, v, ok := strings.Cut(w, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--where %q: want KEY=REGEXP (e.g. reward.mode=peer-ring)", w)
			}
			if _, twice := conds[k]; twice {
				return nil, fmt.Errorf("--where %s: given twice; one REGEXP per key (alternatives: %s='a|b')", k, k)
			}
			re, err := regexp.Compile(v)
			if err != nil {
				return nil, fmt.Errorf("--where %s: %w", k, err)
			}
			conds[k] = re
		}
		n := len(runs)
		var err error
		if runs, err = report.Where(runs, conds); err != nil {
			return nil, fmt.Errorf("--where: %w", err)
		}
		fmt.Fprintf(stdio.Err, "%d of %d run(s) match --where\n", len(runs), n)
		if len(runs) == 0 {
			return nil, fmt.Errorf("--where: no run matches")
		}
	}
	return runs, nil
}
