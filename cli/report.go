package cli

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/report"
)

func newReportCmd(stdio IO) *cobra.Command {
	var out, md, csv, js string
	cmd := &cobra.Command{
		Use:   "report DIR... [-o report.html]",
		Short: "One self-contained HTML report (and Markdown, CSV, JSON tables) of finished runs",
		Long: `Reads run directories (<output_dir>/<name>, as corl train --local writes
them: spec.json and metrics.jsonl) and writes one HTML file that opens
offline: a table with one row per method (Base, Ground-truth, Self-vote,
Entropy, Self-certainty, Co-RL by cohort make-up) and a column per task
family, mean and 95% interval over seeds (runs that differ only in seed
are one method); plots of pass@1 against round and against cumulative
FLOPs with interval bands, answer entropy and distinct answers (collapse),
pseudo-label accuracy; and the members' agreement. The table is also
printed here, and written as Markdown, CSV and JSON on request.

Example:
  corl report runs/gt-seed1 runs/gt-seed2 runs/coRL-seed1 -o report.html --md report.md`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, dirs []string) error {
			var runs []*report.Run
			for _, d := range dirs {
				r, err := report.Load(d)
				if err != nil {
					return err
				}
				runs = append(runs, r)
			}
			t := report.BuildTable(runs)
			fmt.Fprint(stdio.Out, t.Markdown())
			page, err := report.HTML(runs, t)
			if err != nil {
				return err
			}
			js2, _ := json.MarshalIndent(t, "", "  ")
			for _, w := range []struct{ path, body string }{{out, page}, {md, t.Markdown()}, {csv, t.CSV()}, {js, string(js2) + "\n"}} {
				if w.path == "" {
					continue
				}
				if err := os.WriteFile(w.path, []byte(w.body), 0o644); err != nil {
					return err
				}
				fmt.Fprintf(stdio.Err, "wrote %s\n", w.path)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&out, "out", "o", "report.html", "HTML file to write (empty: none)")
	fl.StringVar(&md, "md", "", "also write the table as Markdown")
	fl.StringVar(&csv, "csv", "", "also write the table as CSV")
	fl.StringVar(&js, "json", "", "also write the table as JSON")
	return cmd
}
