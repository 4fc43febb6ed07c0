package record

import (
	"encoding/json"
	"io"

	"github.com/corl-project/corl/datasets"
)

// Schema is the version of the evaluation records this code writes
// (Eval.Schema), so that a reader knows what an older record could not
// hold:
//
//   - absent (0): written before records were versioned. Agreement may be
//     a 0 that was never measured (ForgetUnmeasured drops those), and the
//     members of one run drew their evaluation samples from one seed, so
//     an identical copy's samples, votes and pair predictors are the
//     model's own (SharedDraws).
//   - 2: every field a record has was measured (a missing one is absent,
//     never 0), and each member samples its evaluation from a seed of its
//     own (evaluate.Options.ForMember).
const Schema = 2

// Eval is a held-out evaluation of the cohort.
type Eval struct {
	Round int `json:"round"`
	// Schema is the record's version (see Schema); absent in records
	// written before it.
	Schema int `json:"schema,omitempty"`
	// Members is each member on the original wording; OwnView, for members
	// that train on another view, on that view.
	Members map[string]Result  `json:"members"`
	OwnView map[string]Result  `json:"members_own_view,omitempty"`
	Cohort  CohortResult       `json:"cohort_vote"`     // plurality of the members' pooled answers (samples when eval.samples > 0), original wording
	Kappa   map[string]float64 `json:"kappa,omitempty"` // per member pair, of per-problem correctness
	Compl   map[string]float64 `json:"complementarity,omitempty"`
	// Pairs holds, per member pair "a/b", what each can teach the other
	// (rescue rates, shared errors, vote accuracy): at round 0, the
	// cohort's predictors.
	Pairs map[string]PairPredictors `json:"pairs,omitempty"`
	// PairsValidation is the same measured on the validation split, at
	// round 0 of a run with eval.predictor_split: the predictors a gain on
	// test is regressed on without choosing them on test.
	PairsValidation map[string]PairPredictors `json:"pairs_validation,omitempty"`
	// PairsOwnView is Pairs with each member voting on the wording it
	// trains on (its own view, OwnView) rather than the original: what a
	// member on a rephrased view labels its peer with. Set where some
	// member's view is not 0.
	PairsOwnView map[string]PairPredictors `json:"pairs_own_view,omitempty"`
}

// Truth is the problems' labels as the evaluation compares answers with
// them: normalised by the rule that grades each prompt.
func Truth(problems []datasets.Problem, rule datasets.AnswerRule) []string {
	truth := make([]string, len(problems))
	for i, p := range problems {
		truth[i] = rule.ForPrompt(p.Prompt).Normalize(p.Answer)
	}
	return truth
}

// Vote is the cohort's plurality vote over the members' pooled answers
// (pools[member][problem]), scored against truth.
func Vote(pools [][][]string, truth []string) CohortResult {
	return CohortVote(pools, rightBy(truth))
}

// rightBy says whether answer a to problem p is truth's.
func rightBy(truth []string) func(p int, a string) bool {
	return func(p int, a string) bool { return p < len(truth) && a == truth[p] }
}

// NewEval is the evaluation at round of the members (in names' order)
// with their answer pools: the cohort vote and every pair's numbers.
func NewEval(round int, names []string, members []Result, pools [][][]string, truth []string) Eval {
	e := Eval{Round: round, Schema: Schema, Members: map[string]Result{}, Kappa: map[string]float64{}, Compl: map[string]float64{}}
	for i, n := range names {
		e.Members[n] = members[i]
	}
	e.Cohort = Vote(pools, truth)
	e.Pairs = PairsOf(names, members, pools, truth)
	for key, pp := range e.Pairs {
		e.Kappa[key], e.Compl[key] = pp.Kappa, pp.Complementarity
	}
	return e
}

// SharedDraws says whether e's members drew their evaluation samples from
// one seed (records before Schema 2): two members with the same weights
// then sampled the same answers, and their pair's predictors measure
// nothing.
func (e Eval) SharedDraws() bool { return e.Schema < 2 }

// Upgrade reads a record of an older Schema as this code would hold it:
// what its version could not have measured is missing, not 0. It returns
// how many fields it set missing.
func (e *Eval) Upgrade() int {
	if e.Schema >= 2 {
		return 0
	}
	return ForgetUnmeasured(e.Pairs) + ForgetUnmeasured(e.PairsValidation)
}

// PairsOf is every member pair's predictors ("a/b", in names' order) from
// the members' results and answer pools on problems labelled truth.
func PairsOf(names []string, members []Result, pools [][][]string, truth []string) map[string]PairPredictors {
	right := rightBy(truth)
	out := map[string]PairPredictors{}
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			out[names[i]+"/"+names[j]] = Predict(pools[i], pools[j], members[i].Correct, members[j].Correct, right)
		}
	}
	return out
}

// WriteJSONL writes rounds and evals as a local run's metrics.jsonl holds
// them: the bases' evaluation (round 0) on a line of its own, then a line
// per round, with the evaluation that followed it (Round one more) beside.
func WriteJSONL(w io.Writer, rounds []Round, evals []Eval) error {
	enc := json.NewEncoder(w)
	byRound := map[int]*Eval{}
	for i := range evals {
		byRound[evals[i].Round] = &evals[i]
	}
	line := func(r *Round, e *Eval) error {
		rec := map[string]any{}
		if r != nil {
			rec["round"] = r
		}
		if e != nil {
			rec["eval"] = e
			delete(byRound, e.Round)
		}
		return enc.Encode(rec)
	}
	if e := byRound[0]; e != nil {
		if err := line(nil, e); err != nil {
			return err
		}
	}
	for i := range rounds {
		if err := line(&rounds[i], byRound[rounds[i].Round+1]); err != nil {
			return err
		}
	}
	for i := range evals { // an evaluation without its round's record
		if byRound[evals[i].Round] != nil {
			if err := line(nil, &evals[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
