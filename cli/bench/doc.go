// Package bench holds `corl bench`: the speed measurements (train and
// generate steps, GEMM against a BLAS reference, a whole round by stage,
// and llama.cpp as a speed and logits reference). It is its own package so
// that the user-facing commands in cli do not carry the reference
// harnesses; cmd/corl adds it to the root command (cli.Extra).
package bench

import (
	"github.com/spf13/cobra"

	"github.com/corl-project/corl/cli"
)

// IO is the invocation's streams, as package cli gives them.
type IO = cli.IO

// Commands is `corl bench` and its subcommands, for cli.Main.
func Commands(stdio cli.IO, getenv func(string) string) []*cobra.Command {
	return []*cobra.Command{newBenchCmd(stdio, getenv)}
}
