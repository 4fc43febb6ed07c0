package record

import "github.com/corl-project/corl/datasets"

// CohortResult is the cohort's majority vote over pooled samples.
type CohortResult struct {
	Correct  float64 `json:"correct"`   // problems whose unique top answer is right
	Tie      float64 `json:"tie"`       // problems whose top answers tie (counted as not correct)
	NoAnswer float64 `json:"no_answer"` // problems where no sample of any member parsed
}

// CohortVote pools every member's answers per problem (answers[member][problem]
// holds that member's samples, normalised, "" for none: one greedy answer or
// k sampled ones) and takes the plurality of the pool: maj@(N x k) over the
// cohort. A tie at the top is reported as a tie, never broken by spelling.
func CohortVote(answers [][][]string, right func(problem int, answer string) bool) CohortResult {
	var r CohortResult
	if len(answers) == 0 || len(answers[0]) == 0 {
		return r
	}
	P := len(answers[0])
	for p := 0; p < P; p++ {
		var pool []string
		for _, m := range answers {
			pool = append(pool, m[p]...)
		}
		best, n, tie := datasets.MostCommon(pool)
		switch {
		case n == 0:
			r.NoAnswer++
		case tie:
			r.Tie++
		case right(p, best):
			r.Correct++
		}
	}
	r.Correct /= float64(P)
	r.Tie /= float64(P)
	r.NoAnswer /= float64(P)
	return r
}

// CohenKappa is the chance-corrected agreement of two models' per-problem
// correctness: (p_o - p_e) / (1 - p_e). When chance agreement is total (both
// always right or always wrong) it is 1 if they agree everywhere, else 0.
func CohenKappa(a, b []bool) float64 {
	n := float64(len(a))
	if n == 0 {
		return 0
	}
	var agree, pa, pb float64
	for i := range a {
		if a[i] == b[i] {
			agree++
		}
		if a[i] {
			pa++
		}
		if b[i] {
			pb++
		}
	}
	po, pa, pb := agree/n, pa/n, pb/n
	pe := pa*pb + (1-pa)*(1-pb)
	if pe == 1 {
		if po == 1 {
			return 1
		}
		return 0
	}
	return (po - pe) / (1 - pe)
}

// Complementarity is the share of problems exactly one of the two solves.
func Complementarity(a, b []bool) float64 {
	if len(a) == 0 {
		return 0
	}
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return float64(n) / float64(len(a))
}

// PairPredictors are what two members can teach each other, measured on
// held-out problems before (or during) training: the round-0 predictors of
// a cohort's gain. Votes are each member's plurality answer per problem
// (its samples', or its greedy answer; a tie is no vote).
type PairPredictors struct {
	// Kappa and Complementarity are of the members' greedy correctness.
	Kappa           float64 `json:"kappa"`
	Complementarity float64 `json:"complementarity"`
	// RescueAB is the share of the problems A's vote gets wrong (or does
	// not give) that B's vote gets right: how often B's label would teach
	// A an answer it lacks; RescueBA the other way round.
	RescueAB float64 `json:"rescue_ab"`
	RescueBA float64 `json:"rescue_ba"`
	// SharedError is the share of problems both vote the same wrong
	// answer: errors peer reward cannot correct, and reinforces.
	SharedError float64 `json:"shared_error"`
	// AccA and AccB are the votes' accuracy: the peer accuracy each sees.
	AccA float64 `json:"vote_accuracy_a"`
	AccB float64 `json:"vote_accuracy_b"`
	// Agreement is the share of problems both vote the same answer, right
	// or wrong: per-prompt agreement between the members (near 1 with few
	// of them right is consensus collapse). Nil in records written before
	// it was measured: missing, not 0.
	Agreement *float64 `json:"agreement,omitempty"`
}

// Unmeasured reports whether pp's agreement cannot have been measured: it
// says 0 while the pair shared an error (both voted the same wrong answer,
// so they agreed there) or while their votes were right on more problems
// together than there are (vote accuracies summing past 1, so both were
// right, and agreed, on some). Records saved before agreement was measured
// hold 0 there; their reader drops it (ForgetUnmeasured) rather than read
// a 0 the pair never had.
func (pp PairPredictors) Unmeasured() bool {
	return pp.Agreement != nil && *pp.Agreement == 0 && (pp.SharedError > 0 || pp.AccA+pp.AccB > 1)
}

// ForgetUnmeasured sets to missing each agreement in pairs that cannot have
// been measured (Unmeasured), and returns how many it set.
func ForgetUnmeasured(pairs map[string]PairPredictors) int {
	n := 0
	for k, pp := range pairs {
		if pp.Unmeasured() {
			pp.Agreement = nil
			pairs[k] = pp
			n++
		}
	}
	return n
}

// Predict measures a pair from their answer pools (per problem, the
// samples' normalised answers or the greedy one), their greedy
// correctness, and right, which says whether an answer to a problem is
// right.
func Predict(poolA, poolB [][]string, correctA, correctB []bool, right func(problem int, answer string) bool) PairPredictors {
	pp := PairPredictors{Kappa: CohenKappa(correctA, correctB), Complementarity: Complementarity(correctA, correctB)}
	n := min(len(poolA), len(poolB))
	if n == 0 {
		return pp
	}
	vote := func(pool []string) string {
		v, _, tie := datasets.MostCommon(pool)
		if tie {
			return ""
		}
		return v
	}
	var wrongA, wrongB, rescuedA, rescuedB, shared, agree, okA, okB int
	for p := 0; p < n; p++ {
		a, b := vote(poolA[p]), vote(poolB[p])
		ra, rb := a != "" && right(p, a), b != "" && right(p, b)
		if ra {
			okA++
		} else {
			wrongA++
			if rb {
				rescuedA++
			}
		}
		if rb {
			okB++
		} else {
			wrongB++
			if ra {
				rescuedB++
			}
		}
		if a != "" && a == b {
			agree++
			if !ra {
				shared++
			}
		}
	}
	frac := func(k, of int) float64 {
		if of == 0 {
			return 0
		}
		return float64(k) / float64(of)
	}
	pp.RescueAB, pp.RescueBA = frac(rescuedA, wrongA), frac(rescuedB, wrongB)
	agreement := frac(agree, n)
	pp.SharedError, pp.AccA, pp.AccB, pp.Agreement = frac(shared, n), frac(okA, n), frac(okB, n), &agreement
	return pp
}
