package rl

import "github.com/corl-project/corl/datasets"

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
	// of them right is consensus collapse).
	Agreement float64 `json:"agreement"`
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
	pp.SharedError, pp.AccA, pp.AccB, pp.Agreement = frac(shared, n), frac(okA, n), frac(okB, n), frac(agree, n)
	return pp
}
