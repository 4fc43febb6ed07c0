package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/checker"
	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/stats"
	"github.com/corl-project/corl/tokenizer"
)

// evalFlags are corl eval's flags.
type evalFlags struct {
	dir, tasks      string
	seed            uint64
	n, level, maxNT int
	view, samples   int
	temp            float32
	split, compare  string
	bf              BackendFlags
	file, pField    string
	aField, aType   string
	blind           string
	check           string
	checkTimeout    time.Duration
}

const evalLong = `Evaluates a checkpoint directory on the test split (or --split validation;
keyed by --data-seed, the seed used for pretraining and RL) of each task,
printing greedy pass@1 per task and, with --samples k, sampled pass@1 (the
mean over k samples at --temperature) and maj@k.

With --file, the problems are your file's held-out rows instead: its test
(or validation) set under --data-seed, the rows that neither corl pretrain
--file nor an RL run with data.file and that seed trained on (at most --n),
graded by the file's answer type (--answer-type, or inferred).

Examples:
  corl eval --model examples/bases/llama-small --tasks arith,linear,mod,seq,expr,word --max-level 1 --samples 8
  corl eval --model bases/mine --file rows.jsonl --prompt-field q --answer-field a`

func newEvalCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "pass@1 of a checkpoint on a held-out split of built-in tasks",
		Long:  evalLong,
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return f.run(stdio) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "model", "", "checkpoint directory")
	fl.StringVar(&f.tasks, "tasks", "arith,linear,mod,seq", "comma-separated task families")
	fl.Uint64Var(&f.seed, "data-seed", 1, "split seed")
	fl.IntVar(&f.n, "n", 100, "evaluation problems per task")
	fl.IntVar(&f.level, "max-level", 0, "highest difficulty level (0: all)")
	fl.IntVar(&f.maxNT, "max-new-tokens", 96, "completion length")
	fl.IntVar(&f.view, "view", 0, "surface form of the problems: 0 original, 1 rephrased")
	fl.IntVar(&f.samples, "samples", 0, "sampled completions per problem (sampled pass@1, maj@k)")
	fl.Float32Var(&f.temp, "temperature", 1, "sampling temperature with --samples")
	registerEnum(fl, &f.split, "split", "held-out split: test or validation", "test", "validation")
	fl.StringVar(&f.file, "file", "", "score a JSONL/Parquet file's held-out rows instead of --tasks")
	fl.StringVar(&f.check, "checker", "", "judge responses with your own checker program (\"python3 /abs/check.py\"; see examples/checkers), sandboxed, instead of the answer type")
	fl.DurationVar(&f.checkTimeout, "checker-timeout", time.Minute, "how long the checker may take over all responses")
	fl.StringVar(&f.pField, "prompt-field", "", "--file's prompt field (default: prompt, question or problem)")
	fl.StringVar(&f.aField, "answer-field", "", "--file's answer field (default: answer or solution)")
	fl.StringVar(&f.aType, "answer-type", "", "--file's answer type: number, text, choice, expression (default: inferred)")
	fl.StringVar(&f.blind, "blind-spot", "", "also score the problems of this blind-spot class (odd or even; see corl pretrain --blind-spot) and the rest apart")
	fl.StringVar(&f.compare, "compare", "", "a second checkpoint, scored on the same problems and samples: the paired difference with its interval, McNemar's test on the greedy answers")
	f.bf.Register(fl, getenv)
	return cmd
}

// run scores the checkpoint (and --compare's) and prints what it found.
func (f *evalFlags) run(stdio IO) error {
	if f.dir == "" {
		return fmt.Errorf("--model is required")
	}
	spot := datasets.BlindSpot{Parity: f.blind, Rate: 1}
	if f.blind != "" {
		if err := spot.Validate(); err != nil { // before any evaluation runs
			return fmt.Errorf("--blind-spot: %w", err)
		}
	}
	m, tok, err := loadCheckpoint(f.dir, &f.bf, stdio.Err)
	if err != nil {
		return err
	}
	probs, rule, err := evalProblems(f.file, f.pField, f.aField, f.aType, f.tasks, f.seed, f.split, f.n, f.level, f.view)
	if err != nil {
		return err
	}
	o := evaluate.Options{MaxNew: f.maxNT, Answers: rule, Samples: f.samples, Temperature: f.temp, Seed: f.seed}
	if f.check != "" {
		c := checker.Spec{Command: strings.Fields(f.check), Timeout: f.checkTimeout}
		if err := c.Validate(); err != nil {
			return fmt.Errorf("--checker: %w", err)
		}
		o.Checker = &c
	}
	res, err := evaluate.Run(m, tok, probs, o)
	if err != nil {
		return err
	}
	printEval(stdio.Out, f.dir, f.split, f.samples, f.temp, res)
	if f.blind != "" {
		printBlindSpot(stdio.Out, spot, probs, res)
	}
	if f.samples < 2 {
		fmt.Fprintln(stdio.Out, "signal check: add --samples 8 to see whether RL has anything to learn from on these problems")
	} else if err := printSignal(stdio.Out, res, res, "own vote", "model's own vote"); err != nil {
		return err
	}
	if f.compare == "" {
		return nil
	}
	m2, tok2, err := loadCheckpoint(f.compare, &f.bf, stdio.Err)
	if err != nil {
		return fmt.Errorf("--compare: %w", err)
	}
	other, err := evaluate.Run(m2, tok2, probs, o)
	if err != nil {
		return err
	}
	printComparison(stdio.Out, f.dir, f.compare, res, other)
	if f.samples >= 2 {
		if err := printPeerSignal(stdio.Out, f.dir, f.compare, res, other); err != nil {
			return err
		}
	}
	if f.blind != "" {
		fmt.Fprintf(stdio.Out, "%s:\n", f.compare)
		printBlindSpot(stdio.Out, spot, probs, other)
	}
	return nil
}

// evalProblems are the problems corl eval scores: the file's held-out rows
// (with the file's answer rule), else each task's held-out split in the
// given surface form.
func evalProblems(file, pField, aField, aType, tasks string, seed uint64, split string, n, level, view int) ([]datasets.Problem, datasets.AnswerRule, error) {
	if file != "" {
		return heldOutRows(file, pField, aField, aType, seed, split, n)
	}
	var probs []datasets.Problem
	for _, name := range strings.Split(tasks, ",") {
		t, err := datasets.LookupTask(name)
		if err != nil {
			return nil, datasets.TaskAnswers, fmt.Errorf("--tasks: %w", err)
		}
		set, err := datasets.HeldOut(t, seed, split, n, level)
		if err != nil {
			return nil, datasets.TaskAnswers, err
		}
		probs = append(probs, datasets.Rephrase(set, view)...)
	}
	return probs, datasets.TaskAnswers, nil
}

// printEval prints a checkpoint's greedy (and with samples, sampled)
// pass@1 overall and per task.
func printEval(w io.Writer, dir, split string, samples int, temp float32, res evaluate.Result) {
	fmt.Fprintf(w, "%s: pass@1 %.3f [%.3f, %.3f] on %d %s problems (no answer %.3f)", dir, res.PassAt1,
		res.PassAt1CI.Lo, res.PassAt1CI.Hi, res.N, split, res.NoAnswer)
	if samples > 0 {
		fmt.Fprintf(w, "; sampled pass@1 %.3f [%.3f, %.3f], maj@%d %.3f at temperature %g", res.SampledPassAt1,
			res.SampledCI.Lo, res.SampledCI.Hi, samples, res.MajAtK, temp)
	}
	fmt.Fprintln(w)
	for _, t := range res.Tasks() {
		fmt.Fprintf(w, "  %-8s %.3f", t, res.ByTask[t])
		if samples > 0 {
			fmt.Fprintf(w, "  sampled %.3f", res.SampledByTask[t])
		}
		fmt.Fprintln(w)
	}
}

// printPeerSignal is Co-RL's signal check: each model's samples against
// the other's vote.
func printPeerSignal(w io.Writer, a, b string, ra, rb evaluate.Result) error {
	for _, pair := range []struct {
		name, by string
		r, l     evaluate.Result
	}{{a, b, ra, rb}, {b, a, rb, ra}} {
		fmt.Fprintf(w, "%s labelled by %s:\n", pair.name, pair.by)
		if err := printSignal(w, pair.r, pair.l, "peer vote", "peer's vote"); err != nil {
			return err
		}
	}
	return nil
}

// printSignal prints the signal check of r's samples under ground truth
// and under labeller's vote, and a warning with what to try when either
// is too weak to learn from.
func printSignal(w io.Writer, r, labeller evaluate.Result, row, vote string) error {
	s, err := evaluate.SignalOf(r, labeller)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "signal check, %d samples per problem (GRPO learns only from prompts whose samples are rewarded unequally):\n", s.Samples)
	fmt.Fprintf(w, "  ground truth  %3.0f%% of problems have samples both right and wrong\n", 100*s.Mixed)
	fmt.Fprintf(w, "  %-12s  labels %.0f%% of problems (a unique plurality answer), right on %.0f%% of those; %.0f%% have samples both agreeing and disagreeing with the label\n",
		row, 100*s.Labeled, 100*s.LabelAcc, 100*s.VoteMixed)
	for _, a := range s.Advice(vote) {
		fmt.Fprintln(w, "warning:", a)
	}
	return nil
}

// loadCheckpoint loads a checkpoint directory's model (on the chosen
// backend) and tokenizer; warnings about its weights go to warn.
func loadCheckpoint(dir string, bf *BackendFlags, warn io.Writer) (*model.Model, *tokenizer.BPE, error) {
	be, err := bf.Open()
	if err != nil {
		return nil, nil, err
	}
	m, err := model.LoadHF(be, dir)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range m.Warnings {
		fmt.Fprintln(warn, "warning:", w)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, nil, err
	}
	return m, tok, nil
}

// heldOutRows are a file's test (or validation) rows with answers, at most
// n, and the rule that grades them.
func heldOutRows(file, pField, aField, aType string, seed uint64, split string, n int) ([]datasets.Problem, datasets.AnswerRule, error) {
	if aType != "" && !slices.Contains(datasets.AnswerTypes, aType) {
		return nil, datasets.AnswerRule{}, fmt.Errorf("--answer-type: %q is not one of %s", aType, strings.Join(datasets.AnswerTypes, ", "))
	}
	ds, err := datasets.Load(file, datasets.LoadOptions{PromptField: pField, AnswerField: aField, RequireAnswer: true})
	if err != nil {
		return nil, datasets.AnswerRule{}, err
	}
	set, err := datasets.FileSetByName(ds, seed, split)
	if err != nil {
		return nil, datasets.AnswerRule{}, err
	}
	if len(set) == 0 {
		return nil, datasets.AnswerRule{}, fmt.Errorf("%s: none of its %d rows falls in the %s set (by a hash of --data-seed and the prompt)", file, len(ds.Prompts), split)
	}
	set = set[:min(len(set), n)]
	if aType == "" {
		aType = datasets.InferAnswerType(ds.Labels.Present()) // every row has one: RequireAnswer
	}
	return set, datasets.AnswerRule{Type: aType}, nil
}

// printComparison reports b - a on the same problems: greedy pass@1 with a
// paired-bootstrap interval and McNemar's exact p, and sampled pass@1 with
// its paired-bootstrap interval and p.
func printComparison(w io.Writer, a, b string, ra, rb evaluate.Result) {
	d, p := stats.PairedDiff(ra.Scores(), rb.Scores(), 1)
	onlyA, onlyB, pm := stats.McNemar(ra.Correct, rb.Correct)
	fmt.Fprintf(w, "%s: pass@1 %.3f [%.3f, %.3f]\n", b, rb.PassAt1, rb.PassAt1CI.Lo, rb.PassAt1CI.Hi)
	fmt.Fprintf(w, "difference (--compare minus --model, %s minus %s): pass@1 %+.3f [%+.3f, %+.3f], paired bootstrap p %.3f; McNemar: %d solved only by --model, %d only by --compare, p %.3f\n",
		b, a, d.Mean, d.Lo, d.Hi, p, onlyA, onlyB, pm)
	if len(ra.Truth) > 0 {
		pp := record.Predict(ra.CohortAnswers(), rb.CohortAnswers(), ra.Correct, rb.Correct, func(p int, x string) bool { return p < len(ra.Truth) && x == ra.Truth[p] })
		fmt.Fprintf(w, "what each could teach the other (votes%s): where %s's vote is wrong, %s's is right on %.0f%%; the other way %.0f%%; both vote the same wrong answer on %.0f%% of problems; kappa %.2f, complementarity %.2f\n",
			map[bool]string{true: " of the samples", false: ": greedy answers"}[ra.Samples > 0], a, b, 100*pp.RescueAB, 100*pp.RescueBA, 100*pp.SharedError, pp.Kappa, pp.Complementarity)
	}
	if ra.Samples > 0 {
		ds, ps := stats.PairedDiff(ra.SampledScores(), rb.SampledScores(), 1)
		fmt.Fprintf(w, "  sampled pass@1 %.3f -> %.3f: %+.3f [%+.3f, %+.3f], p %.3f\n", ra.SampledPassAt1, rb.SampledPassAt1, ds.Mean, ds.Lo, ds.Hi, ps)
	}
}

// printBlindSpot scores the problems a blind spot selects and the others
// apart: where a base taught it errs, and whether RL repaired it.
func printBlindSpot(w io.Writer, b datasets.BlindSpot, probs []datasets.Problem, res evaluate.Result) {
	var in, out, sin, sout []float64
	scores, sampled := res.Scores(), res.SampledScores()
	for i, p := range probs {
		if b.Selects(p) {
			in = append(in, scores[i])
			if sampled != nil {
				sin = append(sin, sampled[i])
			}
		} else {
			out = append(out, scores[i])
			if sampled != nil {
				sout = append(sout, sampled[i])
			}
		}
	}
	for _, part := range []struct {
		name     string
		greedy   []float64
		sampledP []float64
	}{{b.Parity + " blind spot", in, sin}, {"the rest", out, sout}} {
		if len(part.greedy) == 0 {
			continue
		}
		ci := stats.MeanCI(part.greedy, 1)
		fmt.Fprintf(w, "  %-16s pass@1 %.3f [%.3f, %.3f] on %d problems", part.name, ci.Mean, ci.Lo, ci.Hi, len(part.greedy))
		if part.sampledP != nil {
			fmt.Fprintf(w, ", sampled %.3f", stats.MeanCI(part.sampledP, 1).Mean)
		}
		fmt.Fprintln(w)
	}
}
