package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/pretrain"
)

func newPretrainCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var (
		mf    modelFlags
		c     pretrain.Config
		tasks string
		out   string
		bf    BackendFlags
	)
	cmd := &cobra.Command{
		Use:   "pretrain",
		Short: "Train a small base model on the labeled pretraining split of built-in tasks",
		Long: `Trains a byte-level model of either family on worked solutions of the chosen
tasks, evaluating greedy pass@1 on the held-out split every --eval-every steps,
until --steps or until pass@1 reaches --target-pass. Writes config.json,
model.safetensors, tokenizer.json and pretrain.json to --out.

The split is keyed by --data-seed: use the same seed for RL so that RL prompts
and evaluation problems were never seen in pretraining.

Example:
  corl pretrain --family llama --layers 4 --dim 128 --heads 4 --tasks arith,linear --out bases/llama-small`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("--out is required")
			}
			be, err := bf.Open()
			if err != nil {
				return err
			}
			c.Model = mf.config(mf.maxSeq)
			c.Tasks = strings.Split(tasks, ",")
			rep, err := pretrain.Run(cmd.Context(), be, c, out, stdio.Err)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "saved %s: %d parameters, %d steps in %.0fs, loss %.3f, eval pass@1 %.3f\n",
				out, rep.Params, rep.Steps, rep.Seconds, rep.Loss, rep.Eval.PassAt1)
			for _, t := range rep.Eval.Tasks() {
				fmt.Fprintf(stdio.Out, "  %-8s pass@1 %.3f\n", t, rep.Eval.ByTask[t])
			}
			return nil
		},
	}
	mf.register(cmd)
	fl := cmd.Flags()
	fl.Lookup("max-seq").DefValue = "384"
	fl.Set("max-seq", "384")
	fl.StringVar(&tasks, "tasks", "arith,linear", "comma-separated task families (see `corl data tasks`)")
	fl.Uint64Var(&c.DataSeed, "data-seed", 1, "split seed (RL must use the same)")
	fl.IntVar(&c.PerTask, "per-task", 4000, "pretraining problems per task")
	fl.IntVar(&c.EvalN, "eval", 100, "evaluation problems per task")
	fl.IntVar(&c.MaxLevel, "max-level", 0, "highest difficulty level to train and evaluate on (0: all)")
	fl.IntVar(&c.Views, "views", 1, "surface forms of each problem to train on: 1 original, 2 also the rephrased one (so cohort members can be given rephrased prompts)")
	fl.IntVar(&c.FirstView, "first-view", 0, "the first surface form trained on (--first-view 1 --views 1: the rephrased wording only); evaluation uses it")
	fl.IntVar(&c.Steps, "steps", 600, "training steps at most")
	fl.IntVar(&c.Batch, "batch", 32, "sequences per step")
	fl.Float32Var(&c.LR, "lr", 3e-3, "peak learning rate")
	fl.IntVar(&c.Warmup, "warmup", 30, "warmup steps")
	fl.Uint64Var(&c.Seed, "seed", 1, "initialisation and batch-sampling seed")
	fl.IntVar(&c.EvalEvery, "eval-every", 100, "steps between evaluations")
	fl.Float64Var(&c.TargetPass, "target-pass", 0, "stop once mean pass@1 reaches this (0: train all steps)")
	fl.IntVar(&c.MaxNew, "max-new-tokens", 96, "completion length at evaluation")
	fl.StringVar(&out, "out", "", "output directory")
	bf.Register(fl, getenv)
	return cmd
}
