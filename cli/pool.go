package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/report"
)

const poolLong = `Pools one planned contrast from each of several independent studies
(their own runs and problems) into one estimate: the weighted sum of the
contrasts, its standard error the root of the weighted sum of their
squared standard errors, and Student's t with Welch-Satterthwaite degrees
of freedom. Each argument is FILE:CONTRAST[@WEIGHT]: a file that
corl report --contrasts-json wrote and the name of one of its contrasts;
the weights default to equal shares summing to 1 (the mean over the
studies). A contrast pooled from several rows of one study (A naming rows
separated by ';') is already one estimate there and can be pooled again.

Pool only what the studies measured alike: the pooled p is that of one
test, not corrected for the others a reader could have pooled.

Example:
  corl pool --name "one-way peer - copy, both studies" \
    results/a/contrasts.json:"peers - copy"@0.7 results/b/contrasts.json:"peers - copy"@0.3`

func newPoolCmd(stdio IO) *cobra.Command {
	var name, md string
	cmd := &cobra.Command{
		Use:   "pool FILE:CONTRAST[@WEIGHT]...",
		Short: "Pool one contrast from each of several independent studies",
		Long:  poolLong,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var rows []report.PlannedRow
			var weights []float64
			weighted := 0
			for _, arg := range args {
				r, w, err := poolArg(arg)
				if err != nil {
					return err
				}
				if w != 0 {
					weighted++
				}
				rows, weights = append(rows, r), append(weights, w)
			}
			if weighted != 0 && weighted != len(args) {
				return fmt.Errorf("pool: %d of %d contrasts have a weight: give every one a weight or none", weighted, len(args))
			}
			if weighted == 0 {
				for i := range weights {
					weights[i] = 1 / float64(len(weights))
				}
			}
			if name == "" {
				name = rows[0].Name + ", pooled"
			}
			p, err := report.PoolStudies(name, rows, weights)
			if err != nil {
				return err
			}
			out := report.PlannedMarkdown(append(rows, p))
			fmt.Fprint(stdio.Out, out)
			if md != "" {
				if err := os.WriteFile(md, []byte(out), 0o644); err != nil {
					return err
				}
				fmt.Fprintf(stdio.Err, "wrote %s\n", md)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the pooled contrast's name (default: the first contrast's, pooled)")
	cmd.Flags().StringVar(&md, "md", "", "also write the contrasts and their pool as Markdown")
	return cmd
}

// poolArg reads FILE:CONTRAST[@WEIGHT]: the named contrast of a file
// corl report --contrasts-json wrote, and its weight (0: none given).
func poolArg(arg string) (report.PlannedRow, float64, error) {
	i := strings.Index(arg, ".json:")
	if i < 0 {
		return report.PlannedRow{}, 0, fmt.Errorf("pool: %q: want FILE.json:CONTRAST[@WEIGHT]", arg)
	}
	file, name := arg[:i+len(".json")], arg[i+len(".json:"):]
	w := 0.0
	if at := strings.LastIndex(name, "@"); at >= 0 {
		v, err := strconv.ParseFloat(name[at+1:], 64)
		if err != nil || v <= 0 {
			return report.PlannedRow{}, 0, fmt.Errorf("pool: %q: weight %q: want a number above 0", arg, name[at+1:])
		}
		name, w = name[:at], v
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return report.PlannedRow{}, 0, fmt.Errorf("pool: %w", err)
	}
	var rows []report.PlannedRow
	if err := json.Unmarshal(b, &rows); err != nil {
		return report.PlannedRow{}, 0, fmt.Errorf("pool: %s: %w (want what corl report --contrasts-json writes)", file, err)
	}
	var names []string
	for _, r := range rows {
		if r.Name == name {
			return r, w, nil
		}
		names = append(names, r.Name)
	}
	return report.PlannedRow{}, 0, fmt.Errorf("pool: %s has no contrast %q (it has: %s)", file, name, strings.Join(names, "; "))
}
