package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/tokenizer"
)

func newEvalCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var (
		dir, tasks      string
		seed            uint64
		n, level, maxNT int
		view            int
		bf              BackendFlags
	)
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Greedy pass@1 of a checkpoint on the held-out split of built-in tasks",
		Long: `Evaluates a checkpoint directory on the evaluation split (keyed by --data-seed,
the seed used for pretraining and RL) of each task, printing pass@1 per task.

Example:
  corl eval --model examples/bases/llama-small --tasks arith,linear,mod,seq,expr,word --max-level 1`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if dir == "" {
				return fmt.Errorf("--model is required")
			}
			m, tok, err := loadCheckpoint(dir, &bf)
			if err != nil {
				return err
			}
			var probs []datasets.Problem
			for _, name := range strings.Split(tasks, ",") {
				t, err := datasets.LookupTask(name)
				if err != nil {
					return fmt.Errorf("--tasks: %w", err)
				}
				s, err := t.Split(seed, datasets.SplitSizes{Eval: n, MaxLevel: level})
				if err != nil {
					return err
				}
				probs = append(probs, datasets.Rephrase(s.Eval, view)...)
			}
			res, err := evaluate.PassAt1(m, tok, probs, maxNT, datasets.TaskAnswers)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "%s: pass@1 %.3f on %d problems (no answer %.3f)\n", dir, res.PassAt1, res.N, res.NoAnswer)
			for _, t := range res.Tasks() {
				fmt.Fprintf(stdio.Out, "  %-8s %.3f\n", t, res.ByTask[t])
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "model", "", "checkpoint directory")
	fl.StringVar(&tasks, "tasks", "arith,linear,mod,seq", "comma-separated task families")
	fl.Uint64Var(&seed, "data-seed", 1, "split seed")
	fl.IntVar(&n, "n", 100, "evaluation problems per task")
	fl.IntVar(&level, "max-level", 0, "highest difficulty level (0: all)")
	fl.IntVar(&maxNT, "max-new-tokens", 96, "completion length")
	fl.IntVar(&view, "view", 0, "surface form of the problems: 0 original, 1 rephrased")
	bf.Register(fl, getenv)
	return cmd
}

// loadCheckpoint loads a checkpoint directory's model (on the chosen
// backend) and tokenizer.
func loadCheckpoint(dir string, bf *BackendFlags) (*model.Model, *tokenizer.BPE, error) {
	be, err := bf.Open()
	if err != nil {
		return nil, nil, err
	}
	m, err := model.LoadHF(be, dir)
	if err != nil {
		return nil, nil, err
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, nil, err
	}
	return m, tok, nil
}
