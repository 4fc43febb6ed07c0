// Package cli holds corl's commands. It takes its IO streams, arguments and
// environment as parameters so that tests run every command in-process.
package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// IO is the standard streams of one invocation.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// Main runs corl with args and returns the process exit code.
func Main(ctx context.Context, stdio IO, args []string, getenv func(string) string) int {
	root := newRoot(stdio, getenv)
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
	root.AddCommand(newBenchCmd(stdio), newDataCmd(stdio), newGenerateCmd(stdio), newPretrainCmd(stdio), newTrainCmd(stdio, getenv))
	return root
}
