package spec

import "testing"

// TestSchedule: evaluation and checkpoints every N rounds and after the
// last; the last round is the scheduled one or the one that spends the
// budget; FLOPs are summed in one order.
func TestSchedule(t *testing.T) {
	s := Default()
	s.Rounds, s.Eval.Every, s.Checkpoint.Every = 10, 4, 3
	var evals, ckpts []int
	for done := 1; done <= s.Rounds; done++ {
		last := s.LastRound(done, 0)
		if s.EvaluateAfter(done, last) {
			evals = append(evals, done)
		}
		if s.CheckpointAfter(done, last) {
			ckpts = append(ckpts, done)
		}
		if last != (done == 10) {
			t.Errorf("round %d: last %v", done, last)
		}
	}
	if want := []int{4, 8, 10}; !equal(evals, want) {
		t.Errorf("evaluations after %v, want %v", evals, want)
	}
	if want := []int{3, 6, 9, 10}; !equal(ckpts, want) {
		t.Errorf("checkpoints after %v, want %v", ckpts, want)
	}
	s.MaxFLOPs = 5
	if s.LastRound(2, 4.9) || !s.LastRound(2, 5) || !s.BudgetSpent(6) {
		t.Error("the budget does not end the run when spent")
	}
	if got := SpentFLOPs([]float64{1, 2}, nil, []float64{0.5}); got != 3.5 {
		t.Errorf("spent %v", got)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPlanByBudget: a budget that pays for 35 of 60 rounds at the first
// round's cost plans 35, keeping the warmup the run started with; one
// that pays for every round, none, or a first round outside the warmup
// plans nothing.
func TestPlanByBudget(t *testing.T) {
	s := Default()
	s.Rounds, s.MaxFLOPs, s.Optim.WarmupRatio = 60, 35e12, 0.05
	rounds, warmup := s.Plan(1e12)
	if rounds != 35 || warmup != 3 {
		t.Fatalf("plan %d rounds, warmup %d; want 35 and 3 (5%% of 60 rounds, rounded up)", rounds, warmup)
	}
	s.ApplyPlan(rounds, warmup)
	if s.Rounds != 35 || s.Warmup() != 3 {
		t.Errorf("after the plan: %d rounds, warmup %d", s.Rounds, s.Warmup())
	}
	if r, _ := s.Plan(0.1e12); r != 0 {
		t.Errorf("a budget for every round planned %d", r)
	}
	s.Optim.WarmupSteps, s.Optim.WarmupRatio, s.Rounds = 0, 0, 60
	if r, _ := s.Plan(1e12); r != 0 {
		t.Errorf("without warmup (the first round's rate depends on the length) planned %d", r)
	}
	s.MaxFLOPs, s.Optim.WarmupSteps = 0, 3
	if r, _ := s.Plan(1e12); r != 0 {
		t.Errorf("no budget planned %d", r)
	}
}
