package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/corl-project/corl/activities"
	"github.com/corl-project/corl/connect"
	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/workflows"
)

func progress(ctx context.Context, cl client.Client, id string) (*workflows.Progress, enumspb.WorkflowExecutionStatus, error) {
	desc, err := cl.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, 0, fmt.Errorf("run %s: %w", id, err)
	}
	status := desc.GetWorkflowExecutionInfo().GetStatus()
	if status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil, status, nil
	}
	v, err := cl.QueryWorkflow(ctx, id, "", workflows.QueryProgress)
	if err != nil {
		return nil, status, fmt.Errorf("query %s: %w", id, err)
	}
	var p workflows.Progress
	if err := v.Get(&p); err != nil {
		return nil, status, err
	}
	return &p, status, nil
}

func printProgress(w io.Writer, p *workflows.Progress) {
	fmt.Fprintf(w, "%s  round %d/%d  %s", p.Name, p.Round, p.Rounds, p.Stage)
	if p.Paused {
		fmt.Fprint(w, "  [paused]")
	}
	if p.Stopping {
		fmt.Fprint(w, "  [stopping after this round]")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tWORKER QUEUE\tREWARD\tLABELED\tLABEL-ACC\tLOSS\tPASS@1")
	for i, m := range p.Members {
		q := "-"
		if i < len(p.Queues) && p.Queues[i] != "" {
			q = p.Queues[i]
		}
		reward, labeled, acc, loss, pass := "-", "-", "-", "-", "-"
		if p.Last != nil && i < len(p.Last.Diag.Models) {
			md := p.Last.Diag.Models[i]
			reward, labeled, loss = fmt.Sprintf("%.3f", md.RewardMean), fmt.Sprintf("%.2f", md.LabeledFrac), fmt.Sprintf("%.4f", p.Last.Loss[i])
			if md.PseudoLabelAcc != nil {
				acc = fmt.Sprintf("%.2f", *md.PseudoLabelAcc)
			}
		}
		if n := len(p.Evals); n > 0 && i < len(p.Evals[n-1].PassAt1) {
			pass = fmt.Sprintf("%.3f", p.Evals[n-1].PassAt1[i])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m, q, reward, labeled, acc, loss, pass)
	}
	tw.Flush()
	if n := len(p.Evals); n > 0 {
		ev := p.Evals[n-1]
		fmt.Fprintf(w, "cohort vote pass@1 %.3f, ties %.3f (round %d)\n", ev.Cohort.Correct, ev.Cohort.Tie, ev.Round)
	}
	printWaits(w, p, time.Now())
	if p.Moves > 0 {
		fmt.Fprintf(w, "members moved after a lost worker: %d\n", p.Moves)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// printWaits says what the current stage waits for and since when, and
// whether the worker it waits on was in the pool's listing the last time
// the run looked (members' work is listed every 30 s while it waits; a
// worker out of the listing has its member moved).
func printWaits(w io.Writer, p *workflows.Progress, now time.Time) {
	for _, wt := range p.Waits {
		what := wt.Activity
		if wt.Member != "" {
			what += " of " + wt.Member
		}
		fmt.Fprintf(w, "waiting %s for %s on %s", now.Sub(wt.Since).Round(time.Second), what, wt.Queue)
		switch {
		case wt.Queue == pipeline.GPUPool:
			fmt.Fprint(w, " (any GPU worker with room)")
		case wt.Queue == pipeline.CPUPool:
			fmt.Fprint(w, " (any CPU worker)")
		case p.Pool == nil:
			fmt.Fprint(w, " (pool not listed yet)")
		case slices.Contains(p.Pool.Queues, wt.Queue):
			fmt.Fprintf(w, " (worker live in the pool %s ago)", now.Sub(p.Pool.At).Round(time.Second))
		default:
			fmt.Fprintf(w, " (worker not in the pool %s ago: moving the member)", now.Sub(p.Pool.At).Round(time.Second))
		}
		fmt.Fprintln(w)
	}
}

// Watch renders progress until the run ends, then its result.
func Watch(ctx context.Context, cl client.Client, id string, w io.Writer, every time.Duration) error {
	last, lastEval := "", -1
	noted := map[string]bool{}
	wait := every
	for {
		p, status, err := progress(ctx, cl, id)
		if err != nil {
			if ctx.Err() != nil || !transient(err) {
				return err
			}
			// The server or the network is away for a while: the run goes
			// on without us, so keep watching.
			fmt.Fprintf(w, "lost contact with Temporal (%v); retrying in %s\n", err, wait)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			wait = min(2*wait, 30*time.Second)
			continue
		}
		wait = every
		if p == nil {
			return finalResult(ctx, cl, id, status, w)
		}
		line := fmt.Sprintf("%s %s round %d/%d: %s", bar(p.Round, p.Rounds), p.Name, p.Round, p.Rounds, p.Stage)
		if line != last {
			fmt.Fprintln(w, line)
			last = line
		}
		for _, n := range p.Notes { // what went wrong and was worked around, a collapse, no gradient
			if !noted[n] {
				noted[n] = true
				fmt.Fprintln(w, "note:", n)
			}
		}
		if n := len(p.Evals); n > 0 && p.Evals[n-1].Round != lastEval {
			lastEval = p.Evals[n-1].Round
			printEvalTable(w, p.Members, p.Evals[n-1])
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// printEvalTable prints one evaluation as a table, a row per member:
// greedy pass@1 with its 95% interval, sampled pass@1 and maj@k where the
// spec samples, then the cohort's pooled vote.
func printEvalTable(w io.Writer, members []string, ev workflows.EvalSummary) {
	fmt.Fprintf(w, "evaluation after round %d\n", ev.Round)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tPASS@1\t95% INTERVAL\tSAMPLED PASS@1\tMAJ@K")
	for i, m := range members {
		if i >= len(ev.PassAt1) {
			break
		}
		ci, sampled, maj := "-", "-", "-"
		if i < len(ev.PassAt1CI) {
			ci = fmt.Sprintf("[%.3f, %.3f]", ev.PassAt1CI[i].Lo, ev.PassAt1CI[i].Hi)
		}
		if i < len(ev.SampledPassAt1) {
			sampled = fmt.Sprintf("%.3f", ev.SampledPassAt1[i])
		}
		if i < len(ev.MajAtK) {
			maj = fmt.Sprintf("%.3f", ev.MajAtK[i])
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%s\t%s\t%s\n", m, ev.PassAt1[i], ci, sampled, maj)
	}
	fmt.Fprintf(tw, "cohort vote\t%.3f\tties %.3f\t\t\n", ev.Cohort.Correct, ev.Cohort.Tie)
	tw.Flush()
}

// transient reports whether a failed call may succeed if repeated: anything
// but an error that says the run, the namespace or the request itself is
// wrong, or that the workflow's query handler failed.
func transient(err error) bool {
	var (
		nf  *serviceerror.NotFound
		nnf *serviceerror.NamespaceNotFound
		ia  *serviceerror.InvalidArgument
		pd  *serviceerror.PermissionDenied
		qf  *serviceerror.QueryFailed
	)
	return !(errors.As(err, &nf) || errors.As(err, &nnf) || errors.As(err, &ia) || errors.As(err, &pd) || errors.As(err, &qf))
}

func bar(done, total int) string {
	const width = 20
	n := done * width / max(total, 1)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

func finalResult(ctx context.Context, cl client.Client, id string, status enumspb.WorkflowExecutionStatus, w io.Writer) error {
	if status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		err := cl.GetWorkflow(ctx, id, "").Get(ctx, nil)
		return fmt.Errorf("run %s ended %s: %v", id, strings.ToLower(strings.TrimPrefix(status.String(), "WORKFLOW_EXECUTION_STATUS_")), rootCause(err))
	}
	var res workflows.Result
	if err := cl.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		return err
	}
	fmt.Fprintf(w, "run %s completed %d rounds", id, res.Rounds)
	if res.Stopped {
		fmt.Fprint(w, " (stopped early)")
	}
	fmt.Fprintln(w)
	for _, ev := range res.Evals {
		fmt.Fprintf(w, "  eval after round %d: pass@1 %v (own view %v)", ev.Round, fmtFloats(ev.PassAt1), fmtFloats(ev.PassAt1OwnView))
		if ev.SampledPassAt1 != nil {
			fmt.Fprintf(w, ", sampled %v, maj@k %v", fmtFloats(ev.SampledPassAt1), fmtFloats(ev.MajAtK))
		}
		fmt.Fprintf(w, ", cohort vote %.3f (ties %.3f)\n", ev.Cohort.Correct, ev.Cohort.Tie)
	}
	if n := len(res.Evals); n > 0 {
		printEvalTable(w, res.Members, res.Evals[n-1])
	}
	for _, k := range res.Checkpoints {
		fmt.Fprintf(w, "  checkpoint %s\n", k)
	}
	if res.RoundSeconds > 0 {
		fmt.Fprintf(w, "  rounds took %.1fs, %.1fs of it inside compute: Temporal overhead %.1f%%\n",
			res.RoundSeconds, res.ComputeSeconds, 100*(1-res.ComputeSeconds/res.RoundSeconds))
	}
	if res.Moves > 0 {
		fmt.Fprintf(w, "  members moved after lost workers: %d\n", res.Moves)
	}
	return nil
}

// rootCause is what failed a run, in words: the outermost application
// error (an activity's own message, which names the member, the file or the
// key), not its innermost cause (a bare "no such file or directory").
func rootCause(err error) string {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		return fmt.Sprint(err)
	}
	if ae.Type() != "" && ae.Type() != "wrapError" {
		return ae.Type() + ": " + ae.Message()
	}
	return ae.Message()
}

func fmtFloats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.3f", x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// idCommand is a command that acts on one run by workflow ID.
func idCommand(use, short string, getenv func(string) string,
	act func(ctx context.Context, cl client.Client, conn *connect.Connection, id string) error) *cobra.Command {
	var cf connFlags
	cmd := &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, conn, err := cf.dial(getenv)
			if err != nil {
				return err
			}
			defer cl.Close()
			return act(cmd.Context(), cl, conn, args[0])
		},
	}
	cf.register(cmd)
	return cmd
}

func newStatusCmd(stdio IO, getenv func(string) string) *cobra.Command {
	return idCommand("status", "Show a run's or a sweep's progress and latest metrics", getenv, func(ctx context.Context, cl client.Client, conn *connect.Connection, id string) error {
		if desc, err := cl.DescribeWorkflowExecution(ctx, id, ""); err == nil && desc.GetWorkflowExecutionInfo().GetType().GetName() == pipeline.SweepWorkflow {
			p, _, err := sweepProgress(ctx, cl, id)
			if err != nil {
				return err
			}
			printSweep(stdio.Out, p)
			return nil
		}
		p, status, err := progress(ctx, cl, id)
		if err != nil {
			return err
		}
		if p == nil {
			return finalResult(ctx, cl, id, status, stdio.Out)
		}
		printProgress(stdio.Out, p)
		printPool(ctx, stdio.Out, cl, conn, id)
		return nil
	})
}

// printPool shows the pool's live GPU workers and the members each holds,
// of every run, as each worker last recorded them (pipeline.Holding), and
// names a worker whose slots are taken with members of runs other than
// run: it takes run's next member only when every worker is full. What
// cannot be read is said, and status goes on.
func printPool(ctx context.Context, w io.Writer, cl client.Client, conn *connect.Connection, run string) {
	store, err := conn.OpenStore(ctx)
	if err != nil {
		fmt.Fprintf(w, "pool: cannot open the store: %v\n", err)
		return
	}
	pool, err := activities.ListPool(ctx, cl, store)
	if err != nil {
		fmt.Fprintf(w, "pool: %v\n", err)
		return
	}
	if len(pool) == 0 {
		fmt.Fprintln(w, "pool: no GPU worker is polling")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKER\tSLOTS\tHELD\tMEMBERS (RUN/MEMBER)")
	var full []string
	for _, wi := range pool {
		held, members := "-", "(not recorded)"
		if b, err := store.Get(ctx, pipeline.HoldingKey(wi.Queue)); err == nil {
			var h pipeline.Holding
			if err := json.Unmarshal(b, &h); err != nil {
				members = fmt.Sprintf("(%s: %v)", pipeline.HoldingKey(wi.Queue), err)
			} else {
				names := make([]string, len(h.Members))
				others := 0
				for i, m := range h.Members {
					names[i] = m.Run + "/" + m.Member
					if m.Run != run {
						others++
					}
				}
				held, members = fmt.Sprint(len(h.Members)), cmp.Or(strings.Join(names, ", "), "-")
				if len(h.Members) >= wi.Slots && others > 0 {
					full = append(full, fmt.Sprintf("worker %s holds %d members in %d slots, %d of other runs", wi.Queue, len(h.Members), wi.Slots, others))
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", wi.Queue, wi.Slots, held, members)
	}
	tw.Flush()
	for _, f := range full {
		fmt.Fprintf(w, "%s: it takes this run's next member only when every worker is full\n", f)
	}
}

func newWatchCmd(stdio IO, getenv func(string) string) *cobra.Command {
	return idCommand("watch", "Follow a run's progress until it ends", getenv, func(ctx context.Context, cl client.Client, conn *connect.Connection, id string) error {
		return Watch(ctx, cl, id, stdio.Out, time.Second)
	})
}

func newSignalCmd(stdio IO, getenv func(string) string, name, short string) *cobra.Command {
	return idCommand(name, short, getenv, func(ctx context.Context, cl client.Client, conn *connect.Connection, id string) error {
		if err := cl.SignalWorkflow(ctx, id, "", name, nil); err != nil {
			return fmt.Errorf("%s %s: %w", name, id, err)
		}
		fmt.Fprintf(stdio.Out, "sent %s to %s\n", name, id)
		return nil
	})
}
