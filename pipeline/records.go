package pipeline

import (
	"maps"
	"math"
	"slices"

	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/spec"
)

// Records builds a pipeline run's records (record.Round, record.Eval, as
// the local runner writes them) from its activities' results: fed each
// completed activity in order, a retried or re-placed activity counts
// once, by its last result. It is the one place that knows which output
// field makes which record field; the report reads histories through it.
type Records struct {
	names   []string
	reward  string
	samples int
	rounds  map[int]*record.Round
	evals   map[int][]*EvalOutput
}

// NewRecords starts the records of a run of spec s.
func NewRecords(s spec.RunSpec) *Records {
	return &Records{names: s.MemberNames(), reward: s.Reward.Mode, samples: s.Eval.Samples,
		rounds: map[int]*record.Round{}, evals: map[int][]*EvalOutput{}}
}

func (r *Records) round(k int) *record.Round {
	m := r.rounds[k]
	if m == nil {
		m = &record.Round{Round: k, Reward: r.reward, Models: make([]record.ModelRound, len(r.names))}
		for i, n := range r.names {
			m.Models[i].Name = n
		}
		r.rounds[k] = m
	}
	return m
}

func (r *Records) member(ref MemberRef) bool { return ref.Member >= 0 && ref.Member < len(r.names) }

// Generated adds a member's rollout.
func (r *Records) Generated(ref MemberRef, g GenerateOutput) {
	if !r.member(ref) {
		return
	}
	m := &r.round(ref.Round).Models[ref.Member]
	m.GenTokens, m.GenFLOPs, m.GenSeconds, m.JudgeFLOPs = g.Tokens, g.FLOPs, g.Seconds, g.JudgeFLOPs
}

// Graded adds a round's grade: its diagnostics and, with peer-judge
// rewards, the judges' scoring.
func (r *Records) Graded(in GradeInput, g GradeOutput) {
	m := r.round(in.Round)
	m.Diag = g.Diag
	for i, f := range g.JudgeFLOPs {
		if i < len(m.Models) {
			m.Models[i].JudgeFLOPs = f
		}
	}
}

// Updated adds a member's policy update.
func (r *Records) Updated(ref MemberRef, u UpdateOutput) {
	if !r.member(ref) {
		return
	}
	m := &r.round(ref.Round).Models[ref.Member]
	u.Stats.Record(m)
	m.UpdateFLOPs, m.UpdateSeconds = u.FLOPs, u.Seconds
}

// Evaluated adds a member's held-out evaluation.
func (r *Records) Evaluated(ref MemberRef, o EvalOutput) {
	if !r.member(ref) {
		return
	}
	if r.evals[ref.Round] == nil {
		r.evals[ref.Round] = make([]*EvalOutput, len(r.names))
	}
	r.evals[ref.Round][ref.Member] = &o
}

// Rounds is the run's round records so far, in round order.
func (r *Records) Rounds() []record.Round {
	var out []record.Round
	for _, k := range slices.Sorted(maps.Keys(r.rounds)) {
		out = append(out, *r.rounds[k])
	}
	return out
}

// Evals is the run's evaluations so far, in round order; an evaluation
// that some member has not finished is left out.
func (r *Records) Evals() []record.Eval {
	var out []record.Eval
	for _, k := range slices.Sorted(maps.Keys(r.evals)) {
		if e, ok := r.eval(k, r.evals[k]); ok {
			out = append(out, e)
		}
	}
	return out
}

// eval turns one evaluation's member outputs into what a local run
// records, or false while a member's output is missing.
func (r *Records) eval(round int, outs []*EvalOutput) (record.Eval, bool) {
	results := make([]record.Result, len(outs))
	pools := make([][][]string, len(outs))
	own := map[string]record.Result{}
	for i, o := range outs {
		if o == nil {
			return record.Eval{}, false
		}
		res := o.Result(r.samples)
		if o.SampledCI != nil && o.SampleCorrect == nil {
			// Recorded before outputs carried them: per-problem right
			// samples from the pooled answers and labels, kept only where
			// they add up to the recorded sampled pass@1.
			res.SampleCorrect = sampleCorrect(o, r.samples)
		}
		if o.OwnView != nil {
			own[r.names[i]] = *o.OwnView
		}
		results[i], pools[i] = res, o.Pool
	}
	e := record.NewEval(round, r.names, results, pools, outs[0].Truth)
	for _, o := range outs {
		e.Schema = min(e.Schema, o.Schema) // a history of older workers' outputs is an older record
	}
	if len(own) > 0 {
		e.OwnView = own
	}
	e.PairsValidation = predictorPairs(r.names, outs)
	e.PairsOwnView = ownViewPairs(r.names, results, pools, outs)
	return e, true
}

// predictorPairs is the pair predictors on the predictor problems, when
// every member's output carries them.
func predictorPairs(names []string, outs []*EvalOutput) map[string]record.PairPredictors {
	results := make([]record.Result, len(outs))
	pools := make([][][]string, len(outs))
	for i, o := range outs {
		if o.Predict == nil {
			return nil
		}
		results[i], pools[i] = record.Result{Correct: o.Predict.Correct}, o.Predict.Pool
	}
	return record.PairsOf(names, results, pools, outs[0].Predict.Truth)
}

// sampleCorrect is each problem's right samples of the pooled answers, or
// nil unless they add up to the output's sampled pass@1.
func sampleCorrect(o *EvalOutput, samples int) []int {
	if len(o.Pool) != len(o.Truth) || len(o.Pool) == 0 {
		return nil
	}
	right, total := make([]int, len(o.Pool)), 0.0
	for p, answers := range o.Pool {
		for _, a := range answers {
			if a == o.Truth[p] {
				right[p]++
			}
		}
		total += float64(right[p]) / float64(samples)
	}
	if math.Abs(total/float64(len(o.Pool))-o.SampledPassAt1) >= 1e-9 {
		return nil
	}
	return right
}

// ownViewPairs is the evaluation's pair predictors with each member voting
// on its own view (record.Eval.PairsOwnView): a view-0 member's original
// results, another's own-view ones; nil where no member has another view,
// or one's output predates its own-view pool.
func ownViewPairs(names []string, results []record.Result, pools [][][]string, outs []*EvalOutput) map[string]record.PairPredictors {
	ownRes := append([]record.Result(nil), results...)
	ownPools := append([][][]string(nil), pools...)
	some := false
	for i, o := range outs {
		if o.OwnView == nil {
			continue
		}
		if o.OwnPool == nil {
			return nil
		}
		ownRes[i], ownPools[i], some = *o.OwnView, o.OwnPool, true
	}
	if !some {
		return nil
	}
	return record.PairsOf(names, ownRes, ownPools, outs[0].Truth)
}
