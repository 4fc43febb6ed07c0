// Command corl trains cohorts of language models with peer rewards. See
// "corl help" for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/corl-project/corl/cli"
	"github.com/corl-project/corl/devcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Args[1:], os.Getenv, devcli.Commands)
	stop()
	os.Exit(code)
}
