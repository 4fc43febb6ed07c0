package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/train"
)

func newTrainCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var (
		sf            SpecFlags
		local, resume bool
		bf            BackendFlags
		stopAfter     int
	)
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Run a cohort from a run spec in this process (--local)",
		Long: `Reads a run spec (YAML or JSON; CORL_* environment variables and --set key=value
override it, e.g. --set rounds=3 or CORL_GRPO_BETA=0.04) and trains the cohort
in this process: generate, grade, aggregate and update every round, evaluation
on held-out problems, checkpoints, and one JSON line of metrics per round in
<output_dir>/<name>/metrics.jsonl.

Example:
  corl train --local -f examples/local.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !local {
				return fmt.Errorf("only --local runs are available in this build; pass --local")
			}
			be, err := bf.Open()
			if err != nil {
				return err
			}
			spec, err := sf.Load(getenv)
			if err != nil {
				return err
			}
			return train.Local(cmd.Context(), be, spec, train.Options{Resume: resume, StopAfter: stopAfter}, stdio.Err)
		},
	}
	fl := cmd.Flags()
	sf.Register(fl)
	fl.BoolVar(&local, "local", false, "run in this process")
	fl.BoolVar(&resume, "resume", false, "continue from the run's last checkpoint")
	bf.Register(fl, getenv)
	fl.IntVar(&stopAfter, "stop-after", 0, "stop with a checkpoint after this many rounds (continue later with --resume)")
	return cmd
}
