package record

// UpdateStats reports one member's policy update.
type UpdateStats struct {
	Loss, KL, ClipFrac, GradNorm, LR float64
	Tokens                           int     // completion tokens run through forward and backward (all epochs)
	LogPMismatch                     float64 // mean |sampling - recomputed| log-prob, when computed
	Steps                            int
	// RecomputeSeconds is the time spent recomputing old (and reference)
	// log-probs before the steps.
	RecomputeSeconds float64
}

// Record puts the update's numbers into the member's round record, as
// both drivers record them.
func (s UpdateStats) Record(m *ModelRound) {
	m.Loss, m.KL, m.ClipFrac, m.GradNorm, m.LR, m.LogPMismatch = s.Loss, s.KL, s.ClipFrac, s.GradNorm, s.LR, s.LogPMismatch
}
