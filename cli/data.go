package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/datasets"
)

func newDataCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{Use: "data", Short: "Built-in tasks and user data sets"}
	cmd.AddCommand(&cobra.Command{
		Use:   "tasks",
		Short: "List the built-in task families",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			w := tabwriter.NewWriter(stdio.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "TASK\tLEVELS\tDESCRIPTION")
			for _, t := range datasets.Tasks() {
				fmt.Fprintf(w, "%s\t%d\t%s\n", t.Name, t.Levels, t.Description)
			}
			return w.Flush()
		},
	})
	cmd.AddCommand(newDataPreviewCmd(stdio), newDataCheckCmd(stdio), newDataExportCmd(stdio))
	return cmd
}

func newDataPreviewCmd(stdio IO) *cobra.Command {
	var (
		task string
		n    int
		seed uint64
	)
	cmd := &cobra.Command{
		Use:   "preview",
		Short: "Print generated problems with their rephrasing, solution and answer",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			t, err := datasets.LookupTask(task)
			if err != nil {
				return fmt.Errorf("--task: %w", err)
			}
			s, err := t.Split(seed, datasets.SplitSizes{Pretrain: n})
			if err != nil {
				return err
			}
			for i, p := range s.Pretrain {
				views := p.Views()
				fmt.Fprintf(stdio.Out, "#%d  %s  level %d\n", i+1, p.ID, p.Level)
				fmt.Fprintf(stdio.Out, "  prompt:    %s\n", views[0])
				for _, v := range views[1:] {
					fmt.Fprintf(stdio.Out, "  rephrased: %s\n", v)
				}
				fmt.Fprintf(stdio.Out, "  solution:  %s\n  answer:    %s\n\n", p.Solution, p.Answer)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&task, "task", "arith", "task family (see `corl data tasks`)")
	cmd.Flags().IntVar(&n, "n", 5, "number of problems")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "generator seed")
	return cmd
}

func newDataCheckCmd(stdio IO) *cobra.Command {
	var (
		file, promptField, answerField string
		requireAnswer                  bool
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Validate a JSONL or Parquet data file; exit non-zero naming each bad row",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if file == "" {
				return fmt.Errorf("--file is required")
			}
			ds, err := datasets.Load(file, datasets.LoadOptions{PromptField: promptField, AnswerField: answerField, RequireAnswer: requireAnswer})
			var le *datasets.LoadError
			if errors.As(err, &le) {
				for _, r := range le.Rows {
					fmt.Fprintln(stdio.Out, r.Error())
				}
				if le.More > 0 {
					fmt.Fprintf(stdio.Out, "... and %d more bad rows\n", le.More)
				}
				return fmt.Errorf("%s: %d bad row(s)", file, len(le.Rows)+le.More)
			}
			if err != nil {
				return err
			}
			labels := ds.Labels.Present()
			fmt.Fprintf(stdio.Out, "%s: %d rows, %d with answers: ok\n", file, len(ds.Prompts), len(labels))
			if len(labels) > 0 {
				parses := datasets.Parses(labels)
				var shares []string
				for _, t := range datasets.AnswerTypes {
					shares = append(shares, fmt.Sprintf("%s %.0f%%", t, 100*parses[t]))
				}
				fmt.Fprintf(stdio.Out, "answer type: %s (inferred; set data.answer_type to choose); labels readable as %s\n",
					datasets.InferAnswerType(labels), strings.Join(shares, ", "))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&file, "file", "", "data file (.jsonl or .parquet)")
	fl.StringVar(&promptField, "prompt-field", "", "prompt field (default: prompt, question or problem)")
	fl.StringVar(&answerField, "answer-field", "", "answer field (default: answer or solution)")
	fl.BoolVar(&requireAnswer, "require-answer", true, "every row must have an answer (evaluation sets)")
	return cmd
}

func newDataExportCmd(stdio IO) *cobra.Command {
	var (
		task, split, out string
		seed             uint64
		sizes            datasets.SplitSizes
		view             int
	)
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write a built-in task's split as JSONL or Parquet",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			t, err := datasets.LookupTask(task)
			if err != nil {
				return fmt.Errorf("--task: %w", err)
			}
			s, err := t.Split(seed, sizes)
			if err != nil {
				return err
			}
			set := map[string][]datasets.Problem{"pretrain": s.Pretrain, "rl": s.RL, "eval": s.Eval}[split]
			if set == nil {
				return fmt.Errorf("--split: %q is not one of pretrain, rl, eval (or its size is 0)", split)
			}
			set = datasets.Rephrase(set, view)
			if out == "" || out == "-" {
				return datasets.WriteJSONL(stdio.Out, set)
			}
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			write := datasets.WriteJSONL
			if len(out) > 8 && out[len(out)-8:] == ".parquet" {
				write = datasets.WriteParquet
			}
			if err := write(f, set); err != nil {
				f.Close()
				return fmt.Errorf("write %s: %w", out, err)
			}
			return f.Close()
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&task, "task", "arith", "task family")
	registerEnum(fl, &split, "split", "the split to write: eval (the test split), pretrain or rl", "eval", "pretrain", "rl")
	fl.StringVar(&out, "out", "-", "output file (.jsonl or .parquet; - for stdout JSONL)")
	fl.Uint64Var(&seed, "seed", 1, "generator seed")
	fl.IntVar(&sizes.Pretrain, "pretrain", 1000, "pretraining set size")
	fl.IntVar(&sizes.RL, "rl", 500, "RL prompt set size")
	fl.IntVar(&sizes.Eval, "eval", 200, "evaluation set size")
	fl.IntVar(&view, "view", 0, "surface form: 0 original, 1 rephrased")
	return cmd
}
