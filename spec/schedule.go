package spec

// The run's schedule, asked by both drivers (the in-process runner and the
// CohortRun workflow) after each round, so that they stop, evaluate and
// checkpoint after the same rounds.

// SpentFLOPs is a run's FLOPs so far from its per-member accumulators
// (generation, updates, scoring passes: one slice each), summed in this
// one order so that both drivers compare the same float64 with
// max_flops.
func SpentFLOPs(perMember ...[]float64) float64 {
	var spent float64
	for _, fs := range perMember {
		for _, f := range fs {
			spent += f
		}
	}
	return spent
}

// BudgetSpent reports whether spent FLOPs have reached max_flops (never,
// without one).
func (s *RunSpec) BudgetSpent(spent float64) bool { return s.MaxFLOPs > 0 && spent >= s.MaxFLOPs }

// LastRound reports whether done completed rounds end the run: the last
// scheduled round, or the FLOPs budget spent.
func (s *RunSpec) LastRound(done int, spent float64) bool {
	return done >= s.Rounds || s.BudgetSpent(spent)
}

// EvaluateAfter reports whether the run evaluates after done rounds: every
// eval.every rounds and after the last.
func (s *RunSpec) EvaluateAfter(done int, last bool) bool {
	return last || (s.Eval.Every > 0 && done%s.Eval.Every == 0)
}

// CheckpointAfter reports whether the run checkpoints after done rounds:
// every checkpoint.every rounds and after the last.
func (s *RunSpec) CheckpointAfter(done int, last bool) bool {
	return last || (s.Checkpoint.Every > 0 && done%s.Checkpoint.Every == 0)
}
