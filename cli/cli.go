package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/workflows"
)

// IO is the standard streams of one invocation.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// Extra builds commands that live outside this package (the embedded
// Temporal server's commands, which link the server).
type Extra func(stdio IO, getenv func(string) string) []*cobra.Command

// Main runs corl with args and returns the process exit code.
func Main(ctx context.Context, stdio IO, args []string, getenv func(string) string, extra ...Extra) int {
	root := newRoot(stdio, getenv)
	for _, e := range extra {
		root.AddCommand(e(stdio, getenv)...)
	}
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stdio.Err, "corl:", err)
		return 1
	}
	return 0
}

func newRoot(stdio IO, getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:           "corl",
		Short:         "Train a cohort of language models with peer rewards and no labels",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newReportCmd(stdio, getenv), newPoolCmd(stdio), newDataCmd(stdio), newGenerateCmd(stdio, getenv), newPretrainCmd(stdio, getenv), newTrainCmd(stdio, getenv), newEvalCmd(stdio, getenv),
		newModelCmd(stdio), newWorkerCmd(stdio, getenv), newGCCmd(stdio, getenv), newRunCmd(stdio, getenv), newSweepCmd(stdio, getenv), newScheduleCmd(stdio, getenv), newStatusCmd(stdio, getenv), newWatchCmd(stdio, getenv),
		newSignalCmd(stdio, getenv, workflows.SignalPause, "Pause a run after its current round (resume continues it)"),
		newSignalCmd(stdio, getenv, workflows.SignalResume, "Resume a paused run"),
		newSignalCmd(stdio, getenv, workflows.SignalStop, "Stop a run after its current round, with a final checkpoint"))
	return root
}
