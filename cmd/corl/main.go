package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/corl-project/corl/cli"
	"github.com/corl-project/corl/cli/bench"
)

// extras are the commands that live outside package cli: corl bench, and by
// build tag the embedded Temporal server's.
var extras = []cli.Extra{bench.Commands}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Args[1:], os.Getenv, extras...)
	stop()
	os.Exit(code)
}
