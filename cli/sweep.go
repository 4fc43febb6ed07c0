package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.yaml.in/yaml/v3"

	"github.com/corl-project/corl/config"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/report"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/workflows"
)

// sweepFile is a sweep as a user writes it:
//
//	name: lr-sweep
//	base: ground-truth.yaml      # a run spec, relative to this file
//	set: {rounds: 30}            # overrides of the base (optional)
//	max_parallel: 2
//	grid:                        # any spec key; cells are the product, first key slowest
//	  optim.learning_rate: [0.0001, 0.0003]
//	  seed: [1, 2, 3]
type sweepFile struct {
	Name        string         `yaml:"name"`
	Base        string         `yaml:"base"`
	Set         map[string]any `yaml:"set"`
	MaxParallel int            `yaml:"max_parallel"`
	Grid        yaml.Node      `yaml:"grid"`
}

// LoadSweep reads a sweep file into the Sweep workflow's input: the base
// spec loaded and validated like `corl run`'s, the grid in the file's order,
// every cell checked before anything starts.
func LoadSweep(file string, getenv func(string) string) (*workflows.SweepInput, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	var f sweepFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if f.Name == "" || f.Base == "" {
		return nil, fmt.Errorf("%s: name and base are required", file)
	}
	base := f.Base
	if !filepath.IsAbs(base) {
		if _, err := os.Stat(base); err != nil {
			base = filepath.Join(filepath.Dir(file), base)
		}
	}
	s, err := config.Load(base, getenv, f.Set)
	if err != nil {
		return nil, fmt.Errorf("%s: base: %w", file, err)
	}
	in := &workflows.SweepInput{Name: f.Name, Base: *s, MaxParallel: max(f.MaxParallel, 1)}
	if f.Grid.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: grid: want a map of spec keys to lists of values", file)
	}
	if len(f.Grid.Content) == 0 {
		return nil, fmt.Errorf("%s:%d: grid: empty: name at least one spec key and its values (one run needs no sweep: corl run)", file, f.Grid.Line)
	}
	for i := 0; i+1 < len(f.Grid.Content); i += 2 {
		key, vals := f.Grid.Content[i].Value, f.Grid.Content[i+1]
		var values []any
		if err := vals.Decode(&values); err != nil {
			return nil, fmt.Errorf("%s:%d: grid %s: want a list of values: %w", file, vals.Line, key, err)
		}
		ax := workflows.Axis{Key: key}
		for _, v := range values {
			j, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: grid %s: %w", file, vals.Line, key, err)
			}
			ax.Values = append(ax.Values, j)
		}
		in.Grid = append(in.Grid, ax)
	}
	// A method's members are found like a spec's: a relative base that
	// is not there from here is looked for next to the sweep file.
	err = eachMethodMembers(in, func(ms []spec.Member) error {
		config.ResolveBases(ms, filepath.Dir(file))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	specs, labels, err := workflows.Cells(*in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for i := range specs {
		if err := config.Validate(&specs[i]); err != nil {
			return nil, fmt.Errorf("%s: cell %d (%s): %w", file, i, labels[i], err)
		}
	}
	return in, nil
}

// prepareSweep loads the sweep file, connects, and uploads the base's local
// models to the store; id defaults to sweep-<name>. The caller closes cl.
func prepareSweep(ctx context.Context, cf *connFlags, file, id string, getenv func(string) string) (*workflows.SweepInput, client.Client, string, error) {
	in, err := LoadSweep(file, getenv)
	if err != nil {
		return nil, nil, "", err
	}
	cl, _, store, err := cf.connect(ctx, getenv)
	if err != nil {
		return nil, nil, "", err
	}
	err = uploadBases(ctx, store, &in.Base)
	if err == nil {
		err = eachMethodMembers(in, func(ms []spec.Member) error {
			return uploadBases(ctx, store, &config.RunSpec{Members: ms})
		})
	}
	if err != nil {
		cl.Close()
		return nil, nil, "", err
	}
	if id == "" {
		id = "sweep-" + in.Name
	}
	return in, cl, id, nil
}

func newSweepCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var (
		cf       connFlags
		file     string
		id       string
		recorded string
		wait     bool
	)
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Start a sweep: one cohort run per cell of a grid over run spec keys",
		Long: `Reads a sweep file (name, base run spec, optional set overrides, max_parallel,
and a grid of spec keys to lists of values), checks every cell, and starts the
Sweep workflow: one child CohortRun per cell, at most max_parallel at once,
with IDs <sweep ID>.cell-NNN. Started again under the same ID (after it
ended), completed cells are skipped; with --wait, a sweep that is still
running is watched instead. With --recorded DIR (a results directory, or
its runs.jsonl.gz), cells whose run spec equals a recorded run's are not
run: a sweep whose finished cells were committed resumes from the
repository on a server that never ran it, and
corl report DIR <sweep ID> then reports them all. The Temporal CLI starts the same from
JSON: temporal workflow start --type Sweep --task-queue corl --input-file sweep.json

Example:
  corl sweep -f examples/sweep-lr.yaml --wait`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, cl, id, err := prepareSweep(cmd.Context(), &cf, file, id, getenv)
			if err != nil {
				return err
			}
			defer cl.Close()
			if recorded != "" {
				if in.Recorded, err = recordedCells(*in, recorded); err != nil {
					return err
				}
				fmt.Fprintf(stdio.Out, "%d cell(s) recorded in %s: not run again\n", len(in.Recorded), recorded)
			}
			run, err := cl.ExecuteWorkflow(cmd.Context(), client.StartWorkflowOptions{ID: id, TaskQueue: pipeline.WorkflowQueue,
				WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL, WorkflowExecutionErrorWhenAlreadyStarted: true}, workflows.Sweep, *in)
			var running *serviceerror.WorkflowExecutionAlreadyStarted
			if errors.As(err, &running) && wait {
				// Still going (a restarted corl dev resumed it): watch it.
				fmt.Fprintf(stdio.Out, "sweep %s is already running; watching it\n", id)
				return watchSweep(cmd.Context(), cl, id, stdio.Out, 2*time.Second)
			}
			if err != nil {
				return fmt.Errorf("start sweep %s: %w", id, err)
			}
			specs, _, _ := workflows.Cells(*in)
			fmt.Fprintf(stdio.Out, "started sweep %s: %d cells, %d at a time\nwatch it: corl status %s\n", run.GetID(), len(specs), in.MaxParallel, run.GetID())
			if !wait {
				return nil
			}
			return watchSweep(cmd.Context(), cl, run.GetID(), stdio.Out, 2*time.Second)
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVarP(&file, "file", "f", "", "sweep file (YAML)")
	cmd.Flags().StringVar(&id, "id", "", "workflow ID (default sweep-<name>)")
	cmd.Flags().BoolVar(&wait, "wait", false, "watch the sweep until it ends")
	cmd.Flags().StringVar(&recorded, "recorded", "", "results directory (or its "+report.RecordsName+") whose recorded runs' cells are not run again")
	return cmd
}

// recordedCells are the sweep's cells whose run spec (bases uploaded, as
// the runs received it) equals that of a complete run in the records at
// path.
func recordedCells(in workflows.SweepInput, path string) ([]int, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, report.RecordsName)
	}
	runs, err := report.LoadRecords(path)
	if err != nil {
		return nil, fmt.Errorf("--recorded: %w", err)
	}
	have := map[string]bool{}
	for _, r := range runs {
		if !r.Complete {
			continue // read while running: its cell still runs
		}
		k, err := report.SpecKey(r.Spec)
		if err != nil {
			return nil, err
		}
		have[k] = true
	}
	specs, _, err := workflows.Cells(in)
	if err != nil {
		return nil, err
	}
	var out []int
	for i := range specs {
		k, err := report.SpecKey(specs[i])
		if err != nil {
			return nil, err
		}
		if have[k] {
			out = append(out, i)
		}
	}
	return out, nil
}

// errEnded marks a sweep that ended without a result (failed, cancelled,
// terminated): watching it again cannot help.
var errEnded = errors.New("ended")

// sweepProgress is the sweep's progress (its result once it has ended).
func sweepProgress(ctx context.Context, cl client.Client, id string) (*workflows.SweepProgress, enumspb.WorkflowExecutionStatus, error) {
	desc, err := cl.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, 0, fmt.Errorf("sweep %s: %w", id, err)
	}
	status := desc.GetWorkflowExecutionInfo().GetStatus()
	if status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		var p workflows.SweepProgress
		if err := cl.GetWorkflow(ctx, id, "").Get(ctx, &p); err != nil {
			return nil, status, fmt.Errorf("%w: sweep %s ended %s: %s", errEnded, id,
				strings.ToLower(strings.TrimPrefix(status.String(), "WORKFLOW_EXECUTION_STATUS_")), rootCause(err))
		}
		return &p, status, nil
	}
	v, err := cl.QueryWorkflow(ctx, id, "", workflows.QuerySweep)
	if err != nil {
		return nil, status, fmt.Errorf("query %s: %w", id, err)
	}
	var p workflows.SweepProgress
	return &p, status, v.Get(&p)
}

// watchSweep prints the sweep's table whenever it changes, until it ends;
// outages are retried as Watch does.
func watchSweep(ctx context.Context, cl client.Client, id string, w io.Writer, every time.Duration) error {
	last := ""
	for {
		p, status, err := sweepProgress(ctx, cl, id)
		if err != nil && (ctx.Err() != nil || errors.Is(err, errEnded) || !transient(err)) {
			return err
		}
		if err != nil {
			fmt.Fprintf(w, "lost contact with Temporal (%v); retrying\n", err)
		} else {
			var b strings.Builder
			printSweep(&b, p)
			if s := b.String(); s != last {
				fmt.Fprint(w, s)
				last = s
			}
			if status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// printSweep writes the table of cells: state and, for finished ones, the
// last evaluation's pass@1 per member and the cohort vote.
func printSweep(w io.Writer, p *workflows.SweepProgress) {
	fmt.Fprintf(w, "sweep %s\n", p.Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CELL\tSETTINGS\tSTATE\tROUNDS\tPASS@1 (last eval)\tSAMPLED\tCOHORT")
	for _, c := range p.Cells {
		rounds, pass, sampled, cohort := "", "", "", ""
		if r := c.Result; r != nil {
			rounds = fmt.Sprint(r.Rounds)
			if n := len(r.Evals); n > 0 {
				ev := r.Evals[n-1]
				pass, sampled, cohort = fmtFloats(ev.PassAt1), fmtFloats(ev.SampledPassAt1), fmt.Sprintf("%.3f", ev.Cohort.Correct)
			}
		}
		state := c.State
		if c.Error != "" {
			state += ": " + c.Error
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Index, c.Label, state, rounds, pass, sampled, cohort)
	}
	tw.Flush()
}

// eachMethodMembers hands fix the members list of every method-axis value
// that sets one, and writes back what fix changed.
func eachMethodMembers(in *workflows.SweepInput, fix func([]spec.Member) error) error {
	for a := range in.Grid {
		if in.Grid[a].Key != workflows.MethodAxis {
			continue
		}
		for j, v := range in.Grid[a].Values {
			var obj map[string]json.RawMessage
			if json.Unmarshal(v, &obj) != nil || obj["members"] == nil {
				continue // Cells reports a malformed value
			}
			var ms []spec.Member
			if err := json.Unmarshal(obj["members"], &ms); err != nil {
				return fmt.Errorf("grid method value %d: members: %w", j, err)
			}
			if err := fix(ms); err != nil {
				return fmt.Errorf("grid method value %d: %w", j, err)
			}
			b, err := json.Marshal(ms)
			if err != nil {
				return err
			}
			obj["members"] = b
			if in.Grid[a].Values[j], err = json.Marshal(obj); err != nil {
				return err
			}
		}
	}
	return nil
}
