package pretrain

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/tokenizer"
)

// Config says what to train and for how long.
type Config struct {
	Model     model.Config `json:"model"`
	Tasks     []string     `json:"tasks"`
	DataSeed  uint64       `json:"data_seed"`  // the split seed; RL must use the same one
	PerTask   int          `json:"per_task"`   // pretraining problems per task
	MaxLevel  int          `json:"max_level"`  // highest difficulty level (0: all)
	Views     int          `json:"views"`      // surface forms trained on (1: original; 2: also rephrased)
	FirstView int          `json:"first_view"` // the first of them (1 with Views 1: the rephrased wording only)
	EvalN     int          `json:"eval_per_task"`
	Steps     int          `json:"steps"`
	Batch     int          `json:"batch"`
	LR        float32      `json:"learning_rate"`
	Warmup    int          `json:"warmup_steps"`
	Seed      uint64       `json:"seed"` // initialisation (and batch order unless OrderSeed is set)
	// OrderSeed, when non-zero, sets the order batches are drawn in apart
	// from the initialisation: two bases with equal Seed and different
	// OrderSeed start from the same weights and see the same data in a
	// different order.
	OrderSeed  uint64  `json:"order_seed,omitempty"`
	EvalEvery  int     `json:"eval_every"`
	TargetPass float64 `json:"target_pass_at_1"` // stop once mean pass@1 reaches it (0: never)
	// StopAt, when non-zero, stops after that step, evaluated and saved
	// whatever the evaluations before it gave, with the learning-rate
	// schedule still Steps's: a point on the trajectory of a run that
	// went on.
	StopAt int `json:"stop_at,omitempty"`
	MaxNew int `json:"max_new_tokens"`
	// File, instead of Tasks: a JSONL/Parquet file of labelled rows,
	// split by datasets.FileSet under DataSeed; its pretrain rows are
	// trained on (solution + "The answer is X." when SolutionField names a
	// column, the answer sentence alone otherwise), its pretrain-val rows
	// (at most EvalN) watched for early stopping.
	File          string `json:"file,omitempty"`
	PromptField   string `json:"prompt_field,omitempty"`
	AnswerField   string `json:"answer_field,omitempty"`
	SolutionField string `json:"solution_field,omitempty"`
	AnswerType    string `json:"answer_type,omitempty"` // "": inferred from the labels
	// BlindSpot, with built-in tasks, teaches a systematic error: a share
	// of one class of mod and linear problems is trained on a wrong
	// procedure (datasets.BlindSpot). Evaluation still scores true answers.
	BlindSpot *datasets.BlindSpot `json:"blind_spot,omitempty"`
}

// Report is written next to the checkpoint as pretrain.json.
type Report struct {
	Config Config          `json:"config"`
	Steps  int             `json:"steps"`
	Loss   float64         `json:"final_loss"`
	Eval   evaluate.Result `json:"eval"` // of the saved weights: those of BestStep
	// BestStep is the evaluated step whose weights are saved: the best
	// early-stopping pass@1 (the later of equals), not necessarily the last.
	BestStep int     `json:"best_step"`
	Seconds  float64 `json:"seconds"`
	Params   int     `json:"params"`
	TokensPS float64 `json:"train_tokens_per_second"`
}

type example struct {
	ids     []int32
	weights []float32 // 1 on the completion (and EOS), 0 on the prompt
}

// Run trains, evaluating every EvalEvery steps, and saves the model,
// tokenizer and report to out. Progress lines go to log.
func Run(ctx context.Context, be gpu.Backend, c Config, out string, log io.Writer) (*Report, error) {
	if (len(c.Tasks) == 0 && c.File == "") || c.Steps <= 0 || c.Batch <= 0 || c.PerTask <= 0 || c.EvalN <= 0 {
		return nil, fmt.Errorf("pretrain: tasks (or a file), steps, batch, per_task and eval_per_task must be set and positive")
	}
	if c.StopAt < 0 || c.StopAt > c.Steps {
		return nil, fmt.Errorf("pretrain: stop_at %d outside 1..steps (%d)", c.StopAt, c.Steps)
	}
	if c.StopAt > 0 && c.TargetPass > 0 {
		return nil, fmt.Errorf("pretrain: stop_at %d and target_pass_at_1 %g are two stopping rules: set one (--target-pass 0)", c.StopAt, c.TargetPass)
	}
	tok := tokenizer.NewBytes()
	c.Model.Vocab = tok.VocabSize()
	m, err := model.New(be, c.Model, c.Seed)
	if err != nil {
		return nil, err
	}
	train, eval, rule, err := examples(&c, tok, m.Cfg.MaxSeq)
	if err != nil {
		return nil, err
	}
	if c.File != "" {
		fmt.Fprintf(log, "%s: %d pretraining rows, %d for early stopping (answer type %s)\n", c.File, len(train), len(eval), rule.Type)
	}
	rep, err := trainLoop(ctx, m, tok, c, train, eval, rule, log)
	if err != nil {
		return nil, err
	}
	if err := save(m, tok, rep, out); err != nil {
		return nil, err
	}
	return rep, nil
}

// examples are the pretraining examples and the early-stopping problems:
// the file's rows, or each task's pretrain split (with the blind spot
// applied, in each surface form trained on) and its pretrain-val split.
func examples(c *Config, tok tokenizer.Tokenizer, maxSeq int) ([]example, []datasets.Problem, datasets.AnswerRule, error) {
	if c.File != "" {
		return fileExamples(c, tok, maxSeq)
	}
	var train []example
	var eval []datasets.Problem
	for _, name := range c.Tasks {
		task, err := datasets.LookupTask(name)
		if err != nil {
			return nil, nil, datasets.TaskAnswers, err
		}
		// Early stopping watches pretraining's own validation split, never
		// the RL runs' evaluation (test) split.
		s, err := task.Split(c.DataSeed, datasets.SplitSizes{Pretrain: c.PerTask, PretrainVal: c.EvalN, MaxLevel: c.MaxLevel})
		if err != nil {
			return nil, nil, datasets.TaskAnswers, err
		}
		eval = append(eval, datasets.Rephrase(s.PretrainVal, c.FirstView)...)
		pre := s.Pretrain
		if c.BlindSpot != nil {
			pre = c.BlindSpot.Apply(pre, c.Seed)
		}
		for v := c.FirstView; v < c.FirstView+max(c.Views, 1); v++ {
			for _, p := range datasets.Rephrase(pre, v) {
				ex, err := makeExample(tok, p, maxSeq)
				if err != nil {
					return nil, nil, datasets.TaskAnswers, err
				}
				train = append(train, ex)
			}
		}
	}
	return train, eval, datasets.TaskAnswers, nil
}

// trainLoop trains m for c.Steps at most, evaluating every c.EvalEvery
// steps and stopping at c.TargetPass; m ends with the best evaluated
// step's weights, which the report describes.
func trainLoop(ctx context.Context, m *model.Model, tok tokenizer.Tokenizer, c Config, train []example, eval []datasets.Problem,
	rule datasets.AnswerRule, log io.Writer) (*Report, error) {
	order := c.Seed
	if c.OrderSeed != 0 {
		order = c.OrderSeed
	}
	r := rand.New(rand.NewPCG(order, 0x70726574))
	rep := &Report{Config: c, Params: m.NumParams()}
	start := time.Now()
	tokens := 0
	evalEvery := c.EvalEvery
	if evalEvery <= 0 {
		evalEvery = c.Steps
	}
	var best []float32 // the best evaluated step's weights
	bestPass, lastEval := -1.0, 0
	for step := 1; step <= c.Steps; step++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b := batch(train, c.Batch, r, tok.EOS())
		opt := model.DefaultOptim(lrAt(c, step))
		loss, err := m.TrainStep(b, opt)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", step, err)
		}
		tokens += b.B * b.T
		rep.Steps, rep.Loss = step, loss
		if step%25 == 0 || step == 1 {
			fmt.Fprintf(log, "step %d/%d  loss %.4f  lr %.2e  %.0f tok/s\n", step, c.Steps, loss, opt.LR, float64(tokens)/time.Since(start).Seconds())
		}
		if step%evalEvery == 0 || step == c.Steps || step == c.StopAt {
			res, err := evaluate.PassAt1(m, tok, eval, c.MaxNew, rule)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(log, "step %d: eval pass@1 %.3f (no answer %.3f)", step, res.PassAt1, res.NoAnswer)
			for _, t := range res.Tasks() {
				fmt.Fprintf(log, "  %s %.2f", t, res.ByTask[t])
			}
			fmt.Fprintln(log)
			lastEval = step
			if step == c.StopAt {
				rep.BestStep, rep.Eval = step, res
				break
			}
			if res.PassAt1 >= bestPass { // the later of equals: more training at the same score
				bestPass, rep.BestStep, rep.Eval = res.PassAt1, step, res
				if best, err = m.CopyParams(); err != nil {
					return nil, err
				}
			}
			if c.TargetPass > 0 && res.PassAt1 >= c.TargetPass {
				break
			}
		}
	}
	if rep.BestStep != lastEval {
		fmt.Fprintf(log, "saving step %d's weights (pass@1 %.3f), the best evaluated, not step %d's\n", rep.BestStep, bestPass, lastEval)
		if err := m.SetParams(best); err != nil {
			return nil, err
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.TokensPS = float64(tokens) / rep.Seconds
	return rep, nil
}

// save writes the model, its tokenizer, pretrain.json (the report without
// per-problem outcomes) and the checksums to out.
func save(m *model.Model, tok *tokenizer.BPE, rep *Report, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := m.SaveHF(out); err != nil {
		return err
	}
	if err := tok.Save(out); err != nil {
		return err
	}
	saved := *rep
	saved.Eval.Correct, saved.Eval.SampleCorrect = nil, nil // the summary, not per-problem outcomes
	js, _ := json.MarshalIndent(saved, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "pretrain.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return model.WriteChecksums(out)
}

func makeExample(tok tokenizer.Tokenizer, p datasets.Problem, maxSeq int) (example, error) {
	prompt, err := tok.Encode(evaluate.PromptText(p.Prompt))
	if err != nil {
		return example{}, err
	}
	completion, err := tok.Encode(" " + datasets.CompletionText(p))
	if err != nil {
		return example{}, err
	}
	ids := append(append(prompt, completion...), tok.EOS())
	if len(ids) > maxSeq+1 {
		return example{}, fmt.Errorf("problem %s: %d tokens exceed max_position_embeddings %d", p.ID, len(ids), maxSeq)
	}
	w := make([]float32, len(ids))
	for i := len(prompt); i < len(ids); i++ {
		w[i] = 1
	}
	return example{ids: ids, weights: w}, nil
}

// fileExamples reads c.File's pretraining rows as examples and its
// pretrain-val rows (at most EvalN) for early stopping, with the rule its
// answers are graded by.
func fileExamples(c *Config, tok tokenizer.Tokenizer, maxSeq int) ([]example, []datasets.Problem, datasets.AnswerRule, error) {
	ds, err := datasets.Load(c.File, datasets.LoadOptions{PromptField: c.PromptField, AnswerField: c.AnswerField,
		SolutionField: c.SolutionField, RequireAnswer: true})
	if err != nil {
		return nil, nil, datasets.AnswerRule{}, err
	}
	if c.AnswerType == "" {
		c.AnswerType = datasets.InferAnswerType(ds.Labels.Present()) // every row has one: RequireAnswer
	}
	rule := datasets.AnswerRule{Type: c.AnswerType}
	pre := datasets.FileSet(ds, c.DataSeed, datasets.SetPretrain)
	eval := datasets.FileSet(ds, c.DataSeed, datasets.SetPretrainVal)
	if len(pre) == 0 || len(eval) == 0 {
		return nil, nil, rule, fmt.Errorf("%s: %d rows give %d pretraining and %d pretrain-val rows (65%% and 5%% of rows by prompt hash); a base needs both",
			c.File, len(ds.Prompts), len(pre), len(eval))
	}
	eval = eval[:min(len(eval), c.EvalN)]
	var train []example
	for _, p := range pre {
		ex, err := makeExample(tok, p, maxSeq)
		if err != nil {
			return nil, nil, rule, err
		}
		train = append(train, ex)
	}
	return train, eval, rule, nil
}

// batch draws B examples and pads them with EOS (weight 0) to the longest.
func batch(train []example, B int, r *rand.Rand, eos int32) model.Batch {
	picks := make([]example, B)
	T := 0
	for i := range picks {
		picks[i] = train[r.IntN(len(train))]
		T = max(T, len(picks[i].ids)-1)
	}
	b := model.Batch{B: B, T: T, Inputs: make([]int32, B*T), Targets: make([]int32, B*T), Weights: make([]float32, B*T)}
	for i, ex := range picks {
		for t := 0; t < T; t++ {
			in, tg, w := eos, eos, float32(0)
			if t+1 < len(ex.ids) {
				in, tg, w = ex.ids[t], ex.ids[t+1], ex.weights[t+1]
			}
			b.Inputs[i*T+t], b.Targets[i*T+t], b.Weights[i*T+t] = in, tg, w
		}
	}
	return b
}

// lrAt is linear warmup then cosine decay to 10% of the peak.
func lrAt(c Config, step int) float32 {
	if step <= c.Warmup {
		return c.LR * float32(step) / float32(max(c.Warmup, 1))
	}
	frac := float64(step-c.Warmup) / float64(max(c.Steps-c.Warmup, 1))
	return c.LR * float32(0.1+0.9*0.5*(1+math.Cos(math.Pi*frac)))
}
