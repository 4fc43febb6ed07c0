package spec

import "math"

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

// Warmup is the run's warmup in optimizer steps: optim.warmup_steps when
// set, else optim.warmup_ratio of its steps, rounded up.
func (s *RunSpec) Warmup() int {
	if s.Optim.WarmupSteps > 0 {
		return s.Optim.WarmupSteps
	}
	return int(math.Ceil(s.Optim.WarmupRatio * float64(s.Rounds*s.GRPO.StepsPerRound())))
}

// Plan is what a run with max_flops continues with after its first round,
// which cost first FLOPs: the rounds the budget pays for at that cost
// (fewer than rounds), and the warmup it started with. The learning rate
// then anneals over those rounds, not over the spec's upper bound, so a
// compute-matched run gets a whole schedule rather than one cut off
// mid-decay. Zero rounds: no plan. There is none without a budget, when
// the budget pays for every round, or when the first round's steps are
// not all within the warmup: the first round ran under the spec's schedule,
// and only while warming up does its learning rate not depend on the
// schedule's length (so a member whose first round is replayed gets the
// same bits).
func (s *RunSpec) Plan(first float64) (rounds, warmup int) {
	if s.MaxFLOPs <= 0 || first <= 0 || s.Warmup() < s.GRPO.StepsPerRound() {
		return 0, 0
	}
	n := int(math.Ceil(s.MaxFLOPs / first))
	if n >= s.Rounds {
		return 0, 0
	}
	return max(n, 1), s.Warmup()
}

// ApplyPlan sets a plan's rounds and warmup (from Plan) in the spec; no
// plan (zero rounds) changes nothing.
func (s *RunSpec) ApplyPlan(rounds, warmup int) {
	if rounds <= 0 {
		return
	}
	s.Rounds, s.Optim.WarmupSteps = rounds, warmup
}

// Spend is what a run has spent and planned so far, as both drivers keep
// it in their durable state (the workflow's State, a local run's
// state.json), so that both ask the schedule the same questions.
type Spend struct {
	// Per member, FLOPs of generation, of updates and of scoring passes
	// (self-certainty, entropy, judging a peer; kept once there are any).
	GenFLOPs    []float64 `json:"generation_flops"`
	UpdateFLOPs []float64 `json:"update_flops"`
	JudgeFLOPs  []float64 `json:"judge_flops,omitempty"`
	// PlannedRounds and PlannedWarmup are a budgeted run's plan after its
	// first round (Plan; 0: none), kept across restarts.
	PlannedRounds int `json:"planned_rounds,omitempty"`
	PlannedWarmup int `json:"planned_warmup,omitempty"`
}

// NewSpend is a fresh run's spend, for n members.
func NewSpend(n int) Spend {
	return Spend{GenFLOPs: make([]float64, n), UpdateFLOPs: make([]float64, n)}
}

// Spent is the run's FLOPs so far, as the schedule counts them.
func (p *Spend) Spent() float64 { return SpentFLOPs(p.GenFLOPs, p.UpdateFLOPs, p.JudgeFLOPs) }

// AddJudge counts f FLOPs of scoring passes to member i of n, growing a
// spend from before judge FLOPs were kept.
func (p *Spend) AddJudge(i, n int, f float64) {
	if f <= 0 {
		return
	}
	if len(p.JudgeFLOPs) < n {
		p.JudgeFLOPs = append(p.JudgeFLOPs, make([]float64, n-len(p.JudgeFLOPs))...)
	}
	p.JudgeFLOPs[i] += f
}

// Adopt makes rounds and warmup (from Plan) the run's plan and s's.
func (p *Spend) Adopt(s *RunSpec, rounds, warmup int) {
	p.PlannedRounds, p.PlannedWarmup = rounds, warmup
	s.ApplyPlan(rounds, warmup)
}

// Resume gives s the plan the run made before it stopped, if any.
func (p *Spend) Resume(s *RunSpec) { s.ApplyPlan(p.PlannedRounds, p.PlannedWarmup) }
