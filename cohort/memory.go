package cohort

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/tokenizer"
)

// PlanMember is member ms's memory plan for s on be (model.Config.Plan),
// read from the checkpoint in dir before it is loaded: its config.json,
// and its tokenizer for the longest of d's prompts in its view. Training
// sequences are that prompt and max_completion_length tokens; generation
// decodes up to 64 sequences at once (the generator's batch) in a cache of
// that length rounded up to 64 positions, as the generator sizes it.
func PlanMember(be gpu.Backend, s *spec.RunSpec, ms spec.Member, dir string, d *Data) (model.Config, []model.PlanRow, error) {
	cfg, err := model.ReadConfig(dir)
	if err != nil {
		return model.Config{}, nil, fmt.Errorf("member %s: %w", ms.Name, err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return model.Config{}, nil, fmt.Errorf("member %s: %w", ms.Name, err)
	}
	longest := 0
	measure := func(text string) error {
		ids, err := tok.Encode(evaluate.PromptText(text))
		longest = max(longest, len(ids))
		return err
	}
	for _, p := range d.RL {
		if err := measure(p.Views[ms.View%len(p.Views)]); err != nil {
			return model.Config{}, nil, fmt.Errorf("member %s: prompt %s: %w", ms.Name, p.ID, err)
		}
	}
	for _, set := range [][]datasets.Problem{d.Eval, datasets.Rephrase(d.Eval, ms.View)} {
		for _, p := range set {
			if err := measure(p.Prompt); err != nil {
				return model.Config{}, nil, fmt.Errorf("member %s: evaluation prompt: %w", ms.Name, err)
			}
		}
	}
	seq := min(longest+s.Generation.MaxCompletion, cfg.MaxSeq)
	parts := 1
	if _, ok := be.(gpu.Splitter); ok {
		parts = max(1, be.Threads())
	}
	_, tiled := be.(gpu.FlashAttention)
	o := model.PlanOptions{MicroBatch: s.MicroBatchSize, Seq: seq, Slots: min(64, max(1, s.PromptsPerRound*s.Generation.NumGenerations)),
		Capacity: min(cfg.MaxSeq, (seq+63)/64*64), HalfKV: s.Generation.KVCache == string(model.KVHalf), Parts: parts,
		Reference: s.GRPO.Beta > 0, Tiled: tiled && !model.UntiledAttention, Recompute: s.Recompute, LogitRows: s.LogitRows,
		BF16Weights: s.Generation.Weights == string(model.WeightBF16) || s.Generation.Weights == string(model.WeightBF16Compute),
		BF16Matmuls: s.UpdatePrecision == "bf16"}
	if ms.LoRA != nil {
		l := model.LoRAOf(*ms.LoRA)
		o.LoRA = &l
	}
	return cfg, cfg.Plan(o), nil
}

// CheckMemory prints each member's memory plan (one line each) and refuses
// a cohort whose plans together pass the memory be reports free, naming the
// largest member and what to change. from is the checkpoint directory a
// resumed run reads (empty: the bases).
func CheckMemory(be gpu.Backend, s *spec.RunSpec, d *Data, from string, log io.Writer) error {
	var total int64
	var worst []model.PlanRow
	worstName := ""
	for _, ms := range s.Members {
		dir := ms.Base
		if from != "" {
			dir = filepath.Join(from, ms.Name)
		}
		cfg, rows, err := PlanMember(be, s, ms, dir, d)
		if err != nil {
			return err
		}
		bytes := model.PlanBytes(rows)
		fmt.Fprintf(log, "memory plan: %s (%.3fB parameters) %s:", ms.Name, float64(cfg.NumParams())/1e9, gib(bytes))
		for _, r := range rows {
			fmt.Fprintf(log, " %s %s;", r.What, gib(r.Bytes))
		}
		fmt.Fprintln(log)
		total += bytes
		if bytes > model.PlanBytes(worst) {
			worst, worstName = rows, ms.Name
		}
	}
	mr, ok := be.(gpu.MemoryReporter)
	if !ok {
		return nil
	}
	free, all, err := mr.Memory()
	if err != nil {
		fmt.Fprintf(log, "memory plan: %s in all; %s cannot say how much memory it has (%v)\n", gib(total), be.Name(), err)
		return nil
	}
	fmt.Fprintf(log, "memory plan: %s in all, %s of %s free on %s\n", gib(total), gib(free), gib(all), be.Name())
	if total <= free {
		return nil
	}
	remaining := free - (total - model.PlanBytes(worst))
	if remaining <= 0 {
		return fmt.Errorf("the cohort needs %s and %s has %s free; the members other than %s alone leave no room: fewer members on this device",
			gib(total), be.Name(), gib(free), worstName)
	}
	err = model.WritePlan(io.Discard, worst, remaining)
	return fmt.Errorf("the cohort needs %s and %s has %s free; the largest member is %s: %v", gib(total), be.Name(), gib(free), worstName, err)
}

// CheckMemberFits refuses a member whose plan passes the memory be has in
// all (where be reports it): no worker of its kind can hold it, whatever
// else it holds.
func CheckMemberFits(be gpu.Backend, name string, rows []model.PlanRow) error {
	mr, ok := be.(gpu.MemoryReporter)
	if !ok {
		return nil
	}
	_, all, err := mr.Memory()
	if err != nil {
		return nil
	}
	if err := model.WritePlan(io.Discard, rows, all); err != nil {
		return fmt.Errorf("member %s does not fit %s: %w", name, be.Name(), err)
	}
	return nil
}

func gib(b int64) string { return model.FormatBytes(b) }
