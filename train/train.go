package train

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/cohort"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/internal/atomicfile"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/rl"
	"github.com/corl-project/corl/spec"
)

// state.json records how far a local run got, for --resume.
type state struct {
	Round int     `json:"completed_rounds"`
	Steps int     `json:"optimizer_steps"`
	Dir   string  `json:"checkpoint"`
	FLOPs float64 `json:"flops,omitempty"` // spent so far (Spend.Spent, kept for states from before per-member FLOPs)
	// Per member, and a budget's plan, as the workflow keeps them, so that
	// both compare the same sum with max_flops.
	spec.Spend
}

// add counts a round's FLOPs, member by member.
func (st *state) add(met *record.Round) {
	n := len(met.Models)
	if len(st.GenFLOPs) < n {
		// A fresh run, or a state from before per-member FLOPs: its total
		// stands as the first member's generation.
		st.GenFLOPs, st.UpdateFLOPs = make([]float64, n), make([]float64, n)
		st.GenFLOPs[0] = st.FLOPs
	}
	for i, mr := range met.Models {
		st.GenFLOPs[i] += mr.GenFLOPs
		st.UpdateFLOPs[i] += mr.UpdateFLOPs
		st.AddJudge(i, n, mr.JudgeFLOPs)
	}
	st.FLOPs = st.Spent()
}

// Options control one invocation of Local.
type Options struct {
	Resume    bool // continue from the run's last checkpoint
	StopAfter int  // stop (with a checkpoint) after this many rounds in this invocation; 0: run to the end
}

// Local runs the spec in this process. Metrics go to
// <output_dir>/<name>/metrics.jsonl; checkpoints to .../checkpoints/round-NNNNN
// (blob.RoundName, as the pipeline names them).
// With Resume, it continues from the last checkpoint, re-running the rounds
// after it with the same seeds, so the result equals an uninterrupted run.
func Local(ctx context.Context, be gpu.Backend, s *spec.RunSpec, o Options, log io.Writer) error {
	given, sp := s, *s // a budget's plan changes rounds and warmup: not in the caller's spec
	s = &sp
	runDir := filepath.Join(s.OutputDir, s.Name)
	data, st, members, err := prepareLocal(be, s, runDir, o.Resume, log)
	if err != nil {
		return err
	}
	mf, err := openMetrics(runDir, o.Resume)
	if err != nil {
		return err
	}
	defer mf.Close()
	enc := json.NewEncoder(mf)
	c := rl.ConfigFromSpec(s)
	if st.Round == 0 && len(data.Eval) > 0 {
		er, err := cohort.Evaluate(members, data, 0, evaluate.OptionsFromSpec(s))
		if err != nil {
			return err
		}
		printEval(log, er)
		if err := enc.Encode(map[string]any{"eval": er}); err != nil {
			return err
		}
	}
	start := time.Now()
	end := s.Rounds
	if o.StopAfter > 0 {
		end = min(end, st.Round+o.StopAfter)
	}
	for r := st.Round; r < end; r++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.BudgetSpent(st.Spent()) {
			break // a resumed run that had spent its budget
		}
		prompts := cohort.PromptsForRound(data.RL, s.Seed, r, s.PromptsPerRound)
		met, err := rl.Round(members, prompts, c, r, st.Steps, func(stage string) {
			fmt.Fprintf(log, "\r%s round %d/%d: %-40s", bar(r, s.Rounds, 20), r+1, s.Rounds, stage)
		})
		if err != nil {
			return err
		}
		st.Steps += s.GRPO.StepsPerRound()
		st.Round = r + 1
		st.add(met)
		if r == 0 && st.PlannedRounds == 0 {
			if n := planBudget(s, &st, given.Rounds, log); n > 0 {
				c, end = rl.ConfigFromSpec(s), min(end, n)
			}
		}
		rec := map[string]any{"round": met}
		printRound(log, s, r, met)
		last := s.LastRound(r+1, st.Spent())
		if len(data.Eval) > 0 && s.EvaluateAfter(r+1, last) {
			t0 := time.Now()
			er, err := cohort.Evaluate(members, data, r+1, evaluate.OptionsFromSpec(s))
			if err != nil {
				return err
			}
			met.Stages.Evaluate = time.Since(t0).Seconds()
			printEval(log, er)
			rec["eval"] = er
		}
		if err := enc.Encode(rec); err != nil {
			return err
		}
		if s.CheckpointAfter(r+1, last) || r+1 == end {
			if err := checkpoint(runDir, r+1, members, &st, enc); err != nil {
				return err
			}
		}
		if last {
			if r+1 < given.Rounds {
				budgetEnded(log, s, &st, r+1)
			}
			break
		}
	}
	fmt.Fprintf(log, "done in %.0fs: metrics %s, checkpoints %s\n", time.Since(start).Seconds(),
		filepath.Join(runDir, "metrics.jsonl"), filepath.Join(runDir, "checkpoints"))
	return nil
}

// prepareLocal makes the run directory, loads the data, the run's state
// (resumed or new) and its members, writes spec.json (the spec as given),
// applies a resumed budget's plan to s, and prints the cohort.
func prepareLocal(be gpu.Backend, s *spec.RunSpec, runDir string, resume bool, log io.Writer) (*cohort.Data, state, []*rl.Member, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, state{}, nil, err
	}
	data, err := cohort.LoadData(s)
	if err != nil {
		return nil, state{}, nil, err
	}
	if err := cohort.CheckMembers(s, data); err != nil {
		return nil, state{}, nil, err
	}
	st, err := readState(runDir, resume)
	if err != nil {
		return nil, state{}, nil, err
	}
	if err := cohort.CheckMemory(be, s, data, st.Dir, log); err != nil {
		return nil, state{}, nil, err
	}
	members, err := loadMembers(be, s, st.Dir, log)
	if err != nil {
		return nil, state{}, nil, err
	}
	js, _ := json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(filepath.Join(runDir, "spec.json"), js, 0o644); err != nil {
		return nil, state{}, nil, err
	}
	st.Resume(s) // a resumed budgeted run goes on as planned (spec.json keeps the spec as given)
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = fmt.Sprintf("%s (%s, %.2fM, view %d)", m.Name, m.Model.Cfg.Family, float64(m.Model.NumParams())/1e6, m.View)
	}
	fmt.Fprintf(log, "run %s: %d rounds x %d prompts x %d samples, reward %s\ncohort: %s\n", s.Name, s.Rounds, s.PromptsPerRound,
		s.Generation.NumGenerations, s.Reward.Mode, strings.Join(names, ", "))
	return data, st, members, nil
}

// planBudget, after a budgeted run's first round, plans the rounds the
// budget pays for at that round's cost (spec.Plan) and the learning rate's
// schedule over them; 0 when there is nothing to plan.
func planBudget(s *spec.RunSpec, st *state, given int, log io.Writer) int {
	n, w := s.Plan(st.Spent())
	if n <= 0 {
		return 0
	}
	st.Adopt(s, n, w)
	fmt.Fprintf(log, "\nmax_flops %.3g: the first round cost %.3g FLOPs, so the budget pays for %d of the %d rounds; the learning rate anneals over those %d",
		s.MaxFLOPs, st.Spent(), n, given, n)
	return n
}

// budgetEnded says why a budgeted run ended before its spec's rounds.
func budgetEnded(log io.Writer, s *spec.RunSpec, st *state, rounds int) {
	if s.BudgetSpent(st.Spent()) {
		fmt.Fprintf(log, "spent max_flops %.3g after round %d (%.3g FLOPs)\n", s.MaxFLOPs, rounds, st.FLOPs)
		return
	}
	fmt.Fprintf(log, "ran the %d rounds max_flops %.3g pays for at the first round's cost (%.3g FLOPs spent)\n", rounds, s.MaxFLOPs, st.FLOPs)
}

// readState is a resumed run's state (state.json), or a new run's.
func readState(runDir string, resume bool) (state, error) {
	var st state
	if !resume {
		return st, nil
	}
	b, err := os.ReadFile(filepath.Join(runDir, "state.json"))
	if err != nil {
		return st, fmt.Errorf("resume: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("resume: state.json: %w", err)
	}
	return st, nil
}

// openMetrics opens metrics.jsonl: appended to on resume, else new.
func openMetrics(runDir string, resume bool) (*os.File, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if !resume {
		flags |= os.O_TRUNC
	}
	return os.OpenFile(filepath.Join(runDir, "metrics.jsonl"), flags, 0o644)
}

// loadMembers loads the cohort: from the bases, or from the checkpoint
// directory a resumed run stopped at (the reference model staying the
// base).
func loadMembers(be gpu.Backend, s *spec.RunSpec, from string, log io.Writer) ([]*rl.Member, error) {
	members := make([]*rl.Member, len(s.Members))
	for i, ms := range s.Members {
		dir := ms.Base
		if from != "" {
			dir = filepath.Join(from, ms.Name)
		}
		var err error
		if members[i], err = cohort.LoadMember(be, ms, dir, s.GRPO.Beta > 0); err != nil {
			return nil, err
		}
		for _, w := range members[i].Model.Warnings {
			fmt.Fprintf(log, "warning: member %s: %s\n", ms.Name, w)
		}
		if from != "" && s.GRPO.Beta > 0 {
			if members[i].Ref, err = model.LoadHF(be, ms.Base); err != nil {
				return nil, err
			}
		}
	}
	return members, nil
}

// printRound is the round's line of the log, and its warnings.
func printRound(log io.Writer, s *spec.RunSpec, r int, met *record.Round) {
	fmt.Fprintf(log, "\r%s round %d/%d: %.1fs", bar(r+1, s.Rounds, 20), r+1, s.Rounds, met.Seconds)
	for i, md := range met.Diag.Models {
		fmt.Fprintf(log, "  %s reward %.2f labeled %.2f", s.Members[i].Name, md.RewardMean, md.LabeledFrac)
		if md.PseudoLabelAcc != nil {
			fmt.Fprintf(log, " label-acc %.2f", *md.PseudoLabelAcc)
		}
	}
	fmt.Fprintln(log)
	if r == 0 { // the first round says whether learning is possible at all
		for _, w := range met.Diag.Warnings(s.MemberNames()) {
			fmt.Fprintln(log, "warning:", w)
		}
	}
	for _, w := range met.Diag.Collapse(s.MemberNames()) {
		fmt.Fprintf(log, "warning: round %d: %s\n", r+1, w)
	}
}

// checkpoint saves every member after round, records it in the metrics
// (after the round's line, which precedes its checkpoint) and moves the
// run's state to it.
func checkpoint(runDir string, round int, members []*rl.Member, st *state, enc *json.Encoder) error {
	dir := filepath.Join(runDir, "checkpoints", blob.RoundName(round))
	t0 := time.Now()
	for _, m := range members {
		if err := cohort.SaveMember(m, filepath.Join(dir, m.Name)); err != nil {
			return err
		}
	}
	if err := enc.Encode(map[string]any{"checkpoint": map[string]any{"round": round, "seconds": time.Since(t0).Seconds()}}); err != nil {
		return err
	}
	st.Dir = dir
	b, _ := json.MarshalIndent(st, "", "  ")
	return atomicfile.WriteBytes(filepath.Join(runDir, "state.json"), b)
}

func printEval(w io.Writer, er *record.Eval) {
	fmt.Fprintf(w, "eval after round %d:", er.Round)
	names := make([]string, 0, len(er.Members))
	for n := range er.Members {
		names = append(names, n)
	}
	sortStrings(names)
	for _, n := range names {
		r := er.Members[n]
		fmt.Fprintf(w, "  %s pass@1 %.3f [%.3f, %.3f]", n, r.PassAt1, r.PassAt1CI.Lo, r.PassAt1CI.Hi)
		if r.Samples > 0 {
			fmt.Fprintf(w, " sampled %.3f [%.3f, %.3f] maj@%d %.3f", r.SampledPassAt1, r.SampledCI.Lo, r.SampledCI.Hi, r.Samples, r.MajAtK)
		}
		if own, ok := er.OwnView[n]; ok {
			fmt.Fprintf(w, " (own view %.3f)", own.PassAt1)
		}
	}
	fmt.Fprintf(w, "  cohort vote %.3f (ties %.3f)", er.Cohort.Correct, er.Cohort.Tie)
	for _, k := range sortedKeys(er.Kappa) {
		fmt.Fprintf(w, "  kappa(%s) %.2f compl %.2f", k, er.Kappa[k], er.Compl[k])
		if pp, ok := er.Pairs[k]; ok {
			fmt.Fprintf(w, " rescue %.2f/%.2f shared-error %.2f", pp.RescueAB, pp.RescueBA, pp.SharedError)
			if pp.Agreement != nil {
				fmt.Fprintf(w, " agreement %.2f", *pp.Agreement)
			}
		}
	}
	fmt.Fprintln(w)
}

func bar(done, total, width int) string {
	n := done * width / max(total, 1)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}
