package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/pretrain"
)

// pretrainFlags are corl pretrain's flags.
type pretrainFlags struct {
	mf        ModelFlags
	c         pretrain.Config
	tasks     string
	out       string
	bf        BackendFlags
	blind     string
	blindRate float64
}

const pretrainLong = `Trains a byte-level model of either family on worked solutions of the chosen
tasks, evaluating greedy pass@1 on the held-out split every --eval-every steps,
until --steps or until pass@1 reaches --target-pass. Writes config.json,
model.safetensors, tokenizer.json and pretrain.json to --out.

The split is keyed by --data-seed: use the same seed for RL so that RL prompts
and evaluation problems were never seen in pretraining.

With --file (JSONL or Parquet, the loader of corl data check), the base is
trained on your labelled rows instead: each row falls in one of the sets
pretrain 65%, pretrain-val 5%, rl 20%, validation 3%, test 7% by a hash of
--data-seed and its prompt; pretraining uses the pretrain rows (the
solution and "The answer is X." with --solution-field, the answer sentence
alone otherwise) and stops early on pretrain-val. A run with data.file and
the same data.data_seed RLs on the rl rows, and corl eval --file scores the
test (or validation) rows.

Examples:
  corl pretrain --family llama --layers 4 --dim 128 --heads 4 --tasks arith,linear --out bases/llama-small
  corl pretrain --family gpt2 --file rows.jsonl --prompt-field q --answer-field a --solution-field s --out bases/mine
  corl pretrain --family llama --tasks linear,mod --max-level 2 --blind-spot odd --blind-rate 0.6 --out bases/blind-odd

--blind-spot teaches a systematic error, for experiments on correlated
errors: a --blind-rate share of the mod problems whose c has that parity are
solved as if "+c" were not there, and of the linear equations whose constant
b has it with the sign of x flipped. Two bases with opposite parities err on
disjoint problems. Its evaluation (and every later one) scores the true
answers.`

func newPretrainCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var f pretrainFlags
	cmd := &cobra.Command{
		Use:   "pretrain",
		Short: "Train a small base model on the labeled pretraining split of built-in tasks or of your file",
		Long:  pretrainLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return f.run(cmd, stdio) },
	}
	f.mf.Register(cmd)
	fl := cmd.Flags()
	fl.Lookup("max-seq").DefValue = "384"
	fl.Set("max-seq", "384")
	fl.StringVar(&f.tasks, "tasks", "arith,linear", "comma-separated task families (see `corl data tasks`)")
	fl.Uint64Var(&f.c.DataSeed, "data-seed", 1, "split seed (RL must use the same)")
	fl.IntVar(&f.c.PerTask, "per-task", 4000, "pretraining problems per task")
	fl.IntVar(&f.c.EvalN, "eval", 100, "evaluation problems per task")
	fl.IntVar(&f.c.MaxLevel, "max-level", 0, "highest difficulty level to train and evaluate on (0: all)")
	fl.IntVar(&f.c.Views, "views", 1, "surface forms of each problem to train on: 1 original, 2 also the rephrased one (so cohort members can be given rephrased prompts)")
	fl.IntVar(&f.c.FirstView, "first-view", 0, "the first surface form trained on (--first-view 1 --views 1: the rephrased wording only); evaluation uses it")
	fl.IntVar(&f.c.Steps, "steps", 600, "training steps at most")
	fl.IntVar(&f.c.Batch, "batch", 32, "sequences per step")
	fl.Float32Var(&f.c.LR, "lr", 3e-3, "peak learning rate")
	fl.IntVar(&f.c.Warmup, "warmup", 30, "warmup steps")
	fl.Uint64Var(&f.c.Seed, "seed", 1, "initialisation and batch-sampling seed")
	fl.Uint64Var(&f.c.OrderSeed, "order-seed", 0, "batch-sampling seed apart from --seed's initialisation (0: --seed)")
	fl.IntVar(&f.c.EvalEvery, "eval-every", 100, "steps between evaluations")
	fl.Float64Var(&f.c.TargetPass, "target-pass", 0, "stop once mean pass@1 reaches this (0: train all steps)")
	fl.IntVar(&f.c.StopAt, "stop-at", 0, "stop after this step and save its weights, the learning-rate schedule still --steps's (0: no such step)")
	fl.IntVar(&f.c.MaxNew, "max-new-tokens", 96, "completion length at evaluation")
	fl.StringVar(&f.out, "out", "", "output directory")
	fl.StringVar(&f.c.File, "file", "", "pretrain on this JSONL/Parquet file's labelled rows instead of --tasks")
	fl.StringVar(&f.c.PromptField, "prompt-field", "", "--file's prompt field (default: prompt, question or problem)")
	fl.StringVar(&f.c.AnswerField, "answer-field", "", "--file's answer field (default: answer or solution)")
	fl.StringVar(&f.c.SolutionField, "solution-field", "", "--file's worked-solution field (default: none; train on the answer alone)")
	fl.StringVar(&f.c.AnswerType, "answer-type", "", "--file's answer type: number, text, choice, expression (default: inferred)")
	fl.StringVar(&f.blind, "blind-spot", "", "teach a systematic error (odd or even): that parity class of mod problems (by c) and linear ones (by b) is trained on a wrong procedure at --blind-rate")
	fl.Float64Var(&f.blindRate, "blind-rate", 0.6, "share of the --blind-spot class's solutions that are wrong")
	f.bf.Register(fl, getenv)
	return cmd
}

// run pretrains the base and prints where it stopped.
func (f *pretrainFlags) run(cmd *cobra.Command, stdio IO) error {
	if f.out == "" {
		return fmt.Errorf("--out is required")
	}
	be, err := f.bf.Open()
	if err != nil {
		return err
	}
	f.c.Model = f.mf.Config(0)
	if f.c.File == "" {
		f.c.Tasks = strings.Split(f.tasks, ",")
	} else if cmd.Flags().Changed("tasks") {
		return fmt.Errorf("--tasks and --file: give one (built-in tasks, or your file)")
	}
	if f.blind != "" {
		if f.c.File != "" {
			return fmt.Errorf("--blind-spot: applies to the built-in mod and linear tasks, not --file")
		}
		f.c.BlindSpot = &datasets.BlindSpot{Parity: f.blind, Rate: f.blindRate}
		if err := f.c.BlindSpot.Validate(); err != nil {
			return fmt.Errorf("--blind-spot: %w", err)
		}
	}
	if f.c.AnswerType != "" && !slices.Contains(datasets.AnswerTypes, f.c.AnswerType) {
		return fmt.Errorf("--answer-type: %q is not one of %s", f.c.AnswerType, strings.Join(datasets.AnswerTypes, ", "))
	}
	rep, err := pretrain.Run(cmd.Context(), be, f.c, f.out, stdio.Err)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdio.Out, "saved %s: %d parameters, %d steps in %.0fs, loss %.3f; the weights of step %d, eval pass@1 %.3f (the best evaluated)\n",
		f.out, rep.Params, rep.Steps, rep.Seconds, rep.Loss, rep.BestStep, rep.Eval.PassAt1)
	for _, t := range rep.Eval.Tasks() {
		fmt.Fprintf(stdio.Out, "  %-8s pass@1 %.3f\n", t, rep.Eval.ByTask[t])
	}
	return nil
}
