package cohort

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/rl"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/tokenizer"
)

// Data is a run's prompts and evaluation problems.
type Data struct {
	RL   []rl.Prompt
	Eval []datasets.Problem
	// Predict is where the round-0 pair predictors are also measured
	// (eval.predictor_split: the validation problems), or nil.
	Predict []datasets.Problem
}

// LoadData builds the RL prompts (interleaved across tasks) and the
// evaluation set from the spec. Built-in tasks use data_seed, the seed the
// bases were pretrained with, so RL and evaluation problems are unseen.
func LoadData(s *spec.RunSpec) (*Data, error) {
	d := &Data{}
	if s.Data.File != "" {
		ds, err := datasets.Load(s.Data.File, datasets.LoadOptions{PromptField: s.Data.PromptField, AnswerField: s.Data.AnswerField})
		if err != nil {
			return nil, err
		}
		rule := datasets.AnswerRuleFromSpec(s.Data)
		rows := datasets.FileSet(ds, s.Data.DataSeed, datasets.SetRL)
		if s.Data.FileSplit == "none" {
			rows = datasets.FileSet(ds, s.Data.DataSeed, -1)
		} else {
			split := datasets.SetTest
			if s.Eval.Split == "validation" {
				split = datasets.SetValidation
			}
			for _, p := range datasets.FileSet(ds, s.Data.DataSeed, split) {
				if p.Answer != "" && len(d.Eval) < s.Eval.Size {
					d.Eval = append(d.Eval, p)
				}
			}
			if s.Eval.PredictorSplit == "validation" {
				for _, p := range datasets.FileSet(ds, s.Data.DataSeed, datasets.SetValidation) {
					if p.Answer != "" && len(d.Predict) < s.Eval.Size {
						d.Predict = append(d.Predict, p)
					}
				}
			}
		}
		if len(rows) == 0 {
			return nil, fmt.Errorf("data.file %s: none of its %d rows falls in the rl set (20%% of rows, by a hash of data.data_seed and the prompt); add rows, or set data.file_split: none to RL on every row",
				s.Data.File, len(ds.Prompts))
		}
		for _, p := range rows {
			d.RL = append(d.RL, rl.Prompt{ID: p.ID, Views: []string{p.Prompt}, Truth: rule.ForPrompt(p.Prompt).Normalize(p.Answer), Label: p.Answer})
		}
	}
	var perTask [][]rl.Prompt
	for _, name := range s.Data.Tasks {
		if s.Data.File != "" {
			break
		}
		task, err := datasets.LookupTask(name)
		if err != nil {
			return nil, err
		}
		sizes := datasets.SplitSizes{RL: s.Data.RLSize, MaxLevel: s.Data.MaxLevel}
		if s.Eval.Split == "validation" || s.Eval.PredictorSplit == "validation" {
			sizes.Validation = s.Eval.Size
		}
		if s.Eval.Split != "validation" {
			sizes.Eval = s.Eval.Size
		}
		sp, err := task.Split(s.Data.DataSeed, sizes)
		if err != nil {
			return nil, err
		}
		perTask = append(perTask, rl.PromptsFrom(sp.RL))
		if s.Eval.Split == "validation" {
			d.Eval = append(d.Eval, sp.Validation...)
		} else {
			d.Eval = append(d.Eval, sp.Eval...)
			d.Predict = append(d.Predict, sp.Validation...)
		}
	}
	for i := 0; len(perTask) > 0 && i < len(perTask[0]); i++ {
		for _, ps := range perTask {
			d.RL = append(d.RL, ps[i])
		}
	}
	if len(d.RL) == 0 {
		return nil, fmt.Errorf("data: no RL prompts")
	}
	return d, nil
}

// PromptsForRound picks round r's prompts: a fixed shuffle of the RL set
// (from the run seed) read P at a time, so the data cursor is the round
// number and a resumed run sees the same prompts.
func PromptsForRound(all []rl.Prompt, seed uint64, round, P int) []rl.Prompt {
	perm := rand.New(rand.NewPCG(seed, 0x64617461)).Perm(len(all))
	out := make([]rl.Prompt, P)
	for i := range out {
		out[i] = all[perm[(round*P+i)%len(all)]]
	}
	return out
}

// LoadMember loads member ms from the checkpoint in dir (and a frozen copy
// when a KL reference is needed).
func LoadMember(be gpu.Backend, ms spec.Member, dir string, withRef bool) (*rl.Member, error) {
	name := ms.Name
	m, err := model.LoadHF(be, dir)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", name, err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", name, err)
	}
	mem := &rl.Member{Name: name, Model: m, Tok: tok, View: ms.View, Frozen: ms.Frozen}
	if withRef { // with adapters, the weights alone: the policy they started from
		if mem.Ref, err = model.LoadHF(be, dir); err != nil {
			return nil, err
		}
	}
	fresh, err := attachAdapters(m, ms, dir)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", name, err)
	}
	if opt := filepath.Join(dir, "optimizer.safetensors"); fileExists(opt) && !fresh { // fresh adapters start their AdamW state at zero
		if err := m.LoadOptimizer(opt); err != nil {
			return nil, fmt.Errorf("member %s: %w", name, err)
		}
	}
	return mem, nil
}

// attachAdapters gives a member with LoRA in its spec its adapters: the
// checkpoint's (a round's, in PEFT's layout), which must be what the spec
// asks for, or fresh ones on its base, drawn from the member's name so
// that every load of the base draws the same; fresh says they were.
func attachAdapters(m *model.Model, ms spec.Member, dir string) (fresh bool, err error) {
	saved := fileExists(filepath.Join(dir, "adapter_config.json"))
	if ms.LoRA == nil {
		if saved {
			return false, fmt.Errorf("%s holds LoRA adapters but the spec gives the member no lora: add its lora settings, or start from the weights alone", dir)
		}
		return false, nil
	}
	want := model.LoRAOf(*ms.LoRA)
	if !saved {
		h := fnv.New64a()
		h.Write([]byte(ms.Name))
		return true, m.AttachLoRA(want, h.Sum64())
	}
	if err := m.LoadLoRA(dir); err != nil {
		return false, err
	}
	got, _ := m.LoRAConfig()
	got.Targets = slices.Sorted(slices.Values(got.Targets))
	sorted := slices.Sorted(slices.Values(want.Targets))
	if got.Rank != want.Rank || got.Alpha != want.Alpha || !slices.Equal(got.Targets, sorted) {
		return false, fmt.Errorf("%s: adapters r %d, lora_alpha %v on %v; the spec asks for r %d, lora_alpha %v on %v", dir, got.Rank, got.Alpha, got.Targets, want.Rank, want.Alpha, sorted)
	}
	return false, nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// SaveMember writes a member's weights, optimizer state and tokenizer, then
// their checksums (model.ChecksumsFile).
func SaveMember(m *rl.Member, dir string) error {
	if err := m.Model.SaveHF(dir); err != nil {
		return err
	}
	if _, ok := m.Model.LoRAConfig(); ok {
		if err := m.Model.SaveLoRA(dir, ""); err != nil {
			return err
		}
	}
	if err := m.Model.SaveOptimizer(filepath.Join(dir, "optimizer.safetensors")); err != nil {
		return err
	}
	bpe, ok := m.Tok.(*tokenizer.BPE)
	if !ok {
		return fmt.Errorf("member %s: tokenizer of type %T cannot be saved", m.Name, m.Tok)
	}
	if err := bpe.Save(dir); err != nil {
		return err
	}
	return model.WriteChecksums(dir)
}

// EvaluateMember scores a member on the original wording of the problems
// and on its own view (the same result again for view 0).
func EvaluateMember(m *rl.Member, eval []datasets.Problem, o evaluate.Options) (orig, own evaluate.Result, err error) {
	if orig, err = evaluate.Run(m.Model, m.Tok, eval, o); err != nil || m.View == 0 {
		return orig, orig, err
	}
	own, err = evaluate.Run(m.Model, m.Tok, datasets.Rephrase(eval, m.View), o)
	return orig, own, err
}

// Predicts says whether the evaluation at round of a cohort of members
// also measures the pair predictors on d.Predict: at round 0, when the
// spec asks for them there and there is a pair.
func (d *Data) Predicts(round, members int) bool {
	return round == 0 && len(d.Predict) > 0 && members > 1
}

// PredictMember is the member's evaluation on the predictor problems, on
// their original wording: what its vote and greedy correctness add to the
// pair predictors.
func PredictMember(m *rl.Member, problems []datasets.Problem, o evaluate.Options) (evaluate.Result, error) {
	return evaluate.Run(m.Model, m.Tok, problems, o)
}

// Evaluate runs greedy pass@1 for every member (original wording and own
// view), the cohort vote, and the pairwise diversity probe on the
// evaluation problems, and at round 0 the pair predictors on d.Predict
// (Predicts). Each member samples from its own seed (Options.ForMember).
func Evaluate(members []*rl.Member, d *Data, round int, o evaluate.Options) (*record.Eval, error) {
	eval := d.Eval
	names := make([]string, len(members))
	results := make([]evaluate.Result, len(members))
	pools := make([][][]string, len(members))
	own := map[string]evaluate.Result{}
	for i, m := range members {
		res, ownView, err := EvaluateMember(m, eval, o.ForMember(m.Name))
		if err != nil {
			return nil, err
		}
		names[i], results[i], pools[i] = m.Name, res, res.CohortAnswers()
		if m.View != 0 {
			own[m.Name] = ownView
		}
	}
	er := record.NewEval(round, names, results, pools, record.Truth(eval, o.Answers))
	er.OwnView = own
	if len(own) > 0 {
		ownRes := make([]evaluate.Result, len(members))
		ownPools := make([][][]string, len(members))
		for i, name := range names {
			r, ok := own[name]
			if !ok {
				r = results[i]
			}
			ownRes[i], ownPools[i] = r, r.CohortAnswers()
		}
		er.PairsOwnView = record.PairsOf(names, ownRes, ownPools, record.Truth(eval, o.Answers))
	}
	if d.Predicts(round, len(members)) {
		for i, m := range members {
			res, err := PredictMember(m, d.Predict, o.ForMember(m.Name))
			if err != nil {
				return nil, err
			}
			results[i], pools[i] = res, res.CohortAnswers()
		}
		er.PairsValidation = record.PairsOf(names, results, pools, record.Truth(d.Predict, o.Answers))
	}
	return &er, nil
}
