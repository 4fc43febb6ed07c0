package rl

import (
	"fmt"
	"math"
	"sort"

	"github.com/corl-project/corl/datasets"
)

// ModelDiag is one model's diagnostics for a round.
type ModelDiag struct {
	RewardMean      float64 `json:"reward_mean"`
	RewardStd       float64 `json:"reward_std"`
	ZeroVarFrac     float64 `json:"zero_variance_groups"` // groups whose rewards are all equal: no gradient
	LabeledFrac     float64 `json:"labeled_fraction"`
	ParseRate       float64 `json:"parse_rate"`
	AnswerEntropy   float64 `json:"answer_entropy"`   // nats, mean over prompts; collapse -> 0
	DistinctAnswers float64 `json:"distinct_answers"` // mean over prompts
	MeanLength      float64 `json:"mean_length"`
	// ModalAnswer is the answer the member's votes give most often across
	// the round's prompts, ModalShare the share of prompts voting it: near
	// 1 when the member answers everything alike, a collapse across
	// prompts that per-prompt entropy cannot see.
	ModalAnswer string  `json:"modal_answer,omitempty"`
	ModalShare  float64 `json:"modal_answer_share"`
	// Against held-out truth, when the prompts have it (diagnostic only).
	PseudoLabelAcc *float64 `json:"pseudo_label_accuracy,omitempty"` // labeled prompts whose label is right
	SampleAcc      *float64 `json:"sample_accuracy,omitempty"`       // samples with the right answer
	MajAcc         *float64 `json:"maj_accuracy,omitempty"`          // prompts whose plurality is right
}

// PairDiag compares two models of the cohort.
type PairDiag struct {
	I, J            int      `json:"-"`
	Pair            [2]int   `json:"pair"`
	Agreement       float64  `json:"vote_agreement"` // prompts where both vote the same answer
	Kappa           *float64 `json:"kappa,omitempty"`
	Complementarity *float64 `json:"complementarity,omitempty"`
}

// Diagnostics are a round's numbers beyond the loss.
type Diagnostics struct {
	Models []ModelDiag `json:"models"`
	Pairs  []PairDiag  `json:"pairs"`
	// TruthModalShare is the share of the round's prompts whose right
	// answer is the most common right answer: how alike the answers
	// should be (nil without truth).
	TruthModalShare *float64 `json:"truth_modal_share,omitempty"`
}

// Diagnose computes diagnostics from rollouts, the strategy output and,
// optionally, the normalised truth (nil: no accuracy figures).
func Diagnose(rollouts [][]Group, out Output, truth []string, threshold float64) Diagnostics {
	var d Diagnostics
	correct := make([][]bool, len(rollouts)) // per model, per prompt: plurality right
	votes := make([][]Vote, len(rollouts))
	for i, m := range rollouts {
		var md ModelDiag
		var all []float64
		var labeled, parsed, samples, lengths, pseudoN, pseudoOK, sampleOK, majOK int
		for p, g := range m {
			r := out.Rewards[i][p]
			all = append(all, r...)
			if _, s := meanStd(r); s == 0 {
				md.ZeroVarFrac++
			}
			if out.Labels != nil && out.Labels[i][p].Labeled {
				labeled++
				if truth != nil {
					pseudoN++
					if out.Labels[i][p].Answer == truth[p] {
						pseudoOK++
					}
				}
			}
			answers := make([]string, 0, len(g))
			for _, s := range g {
				samples++
				lengths += s.Tokens
				answers = append(answers, s.Answer)
				if s.Answer != "" {
					parsed++
					if truth != nil && s.Answer == truth[p] {
						sampleOK++
					}
				}
			}
			h, distinct := answerEntropy(answers)
			md.AnswerEntropy += h
			md.DistinctAnswers += float64(distinct)
			v := Plurality(g, threshold)
			votes[i] = append(votes[i], v)
			ok := truth != nil && v.Answer != "" && v.Answer == truth[p]
			correct[i] = append(correct[i], ok)
			if ok {
				majOK++
			}
		}
		P := float64(len(m))
		var voted []string
		for _, v := range votes[i] {
			if v.Answer != "" {
				voted = append(voted, v.Answer)
			}
		}
		if modal, n, _ := datasets.MostCommon(voted); n > 0 && P > 0 {
			md.ModalAnswer, md.ModalShare = modal, float64(n)/P
		}
		md.RewardMean, md.RewardStd = meanStd(all)
		if P > 0 {
			md.ZeroVarFrac /= P
			md.LabeledFrac = float64(labeled) / P
			md.AnswerEntropy /= P
			md.DistinctAnswers /= P
		}
		if samples > 0 {
			md.ParseRate = float64(parsed) / float64(samples)
			md.MeanLength = float64(lengths) / float64(samples)
		}
		if truth != nil {
			sa, ma := float64(sampleOK)/math.Max(1, float64(samples)), float64(majOK)/math.Max(1, P)
			md.SampleAcc, md.MajAcc = &sa, &ma
			if pseudoN > 0 {
				pa := float64(pseudoOK) / float64(pseudoN)
				md.PseudoLabelAcc = &pa
			}
		}
		d.Models = append(d.Models, md)
	}
	if len(truth) > 0 {
		_, n, _ := datasets.MostCommon(truth)
		share := float64(n) / float64(len(truth))
		d.TruthModalShare = &share
	}
	d.Pairs = pairDiags(votes, correct, truth != nil)
	return d
}

// pairDiags are every member pair's agreement of votes and, with labels,
// the kappa and complementarity of their correctness.
func pairDiags(votes [][]Vote, correct [][]bool, labelled bool) []PairDiag {
	var out []PairDiag
	for i := range votes {
		for j := i + 1; j < len(votes); j++ {
			pd := PairDiag{I: i, J: j, Pair: [2]int{i, j}}
			agree := 0
			for p := range votes[i] {
				if votes[i][p].Answer != "" && votes[i][p].Answer == votes[j][p].Answer {
					agree++
				}
			}
			if n := len(votes[i]); n > 0 {
				pd.Agreement = float64(agree) / float64(n)
			}
			if labelled {
				k, c := CohenKappa(correct[i], correct[j]), Complementarity(correct[i], correct[j])
				pd.Kappa, pd.Complementarity = &k, &c
			}
			out = append(out, pd)
		}
	}
	return out
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

// answerEntropy is the entropy (nats) of the answers' distribution, "no
// answer" counted as one more outcome, and the number of distinct parsed
// answers. It sums over the answers in sorted order, so the float result
// never depends on map order.
func answerEntropy(answers []string) (h float64, distinct int) {
	sorted := append([]string(nil), answers...)
	sort.Strings(sorted)
	for i := 0; i < len(sorted); {
		j := i
		for j < len(sorted) && sorted[j] == sorted[i] {
			j++
		}
		q := float64(j-i) / float64(len(sorted))
		h -= q * math.Log(q)
		if sorted[i] != "" {
			distinct++
		}
		i = j
	}
	return h, distinct
}

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

// noSignal is the share of a member's prompts whose samples all got the
// same reward beyond which its update is nearly empty.
const noSignal = 0.9

// Warnings says, for each member (named by names) whose update had almost
// nothing to learn from this round, why and where to look.
func (d Diagnostics) Warnings(names []string) []string {
	var out []string
	for i, m := range d.Models {
		if i < len(names) && m.ZeroVarFrac >= noSignal {
			out = append(out, fmt.Sprintf("member %s: %.0f%% of the round's prompts gave all its samples one reward (no gradient; labeled %.0f%%): the run can hardly learn; `corl eval --samples 8` on its base (with --compare a peer) says why",
				names[i], 100*m.ZeroVarFrac, 100*m.LabeledFrac))
		}
	}
	return out
}

// A member has collapsed when at least half the round's prompts vote one
// answer and, with truth, a quarter of the prompts more than the right
// answers share (a task whose answers are mostly "yes" is not a collapse).
const (
	collapseShare  = 0.5
	collapseMargin = 0.25
)

// Collapsed reports whether member i's votes have collapsed onto one
// answer across the round's prompts.
func (d Diagnostics) Collapsed(i int) bool {
	m := d.Models[i]
	if m.ModalShare < collapseShare {
		return false
	}
	return d.TruthModalShare == nil || m.ModalShare >= *d.TruthModalShare+collapseMargin
}

// Collapse says which members (named by names) have collapsed onto one
// answer this round, and whether the whole cohort has, onto the same one:
// then peer rewards reinforce it, whatever pass@1 says.
func (d Diagnostics) Collapse(names []string) []string {
	var out []string
	same, all := "", len(d.Models) > 1
	for i, m := range d.Models {
		if i >= len(names) || !d.Collapsed(i) {
			all = false
			continue
		}
		expect := "no labels to compare with"
		if d.TruthModalShare != nil {
			expect = fmt.Sprintf("the right answers share at most %.0f%%", 100**d.TruthModalShare)
		}
		out = append(out, fmt.Sprintf("member %s: %.0f%% of the round's prompts vote one answer (%q; %s): its answers are collapsing across prompts",
			names[i], 100*m.ModalShare, m.ModalAnswer, expect))
		if i == 0 {
			same = m.ModalAnswer
		} else if m.ModalAnswer != same {
			all = false
		}
	}
	if all {
		out = append(out, fmt.Sprintf("the cohort has collapsed onto one answer (%q): every member votes it on most prompts, so peer rewards reinforce it", same))
	}
	for _, pd := range d.Pairs { // Pair, not I and J: diagnostics also arrive as JSON
		i, j := pd.Pair[0], pd.Pair[1]
		if i < len(names) && j < len(names) && j < len(d.Models) && d.consensus(pd) {
			out = append(out, fmt.Sprintf("members %s and %s: they vote the same answer on %.0f%% of the round's prompts, and the labels they give are right on %.0f%%: a consensus collapse onto shared errors, which peer rewards reinforce",
				names[i], names[j], 100*pd.Agreement, 100*d.pairLabelAcc(pd)))
		}
	}
	return out
}

// Two members have fallen into consensus collapse when they vote the same
// answer on most prompts (consensusAgreement) while the labels they give
// each other are right no more than consensusAccuracy of the time:
// agreement that is not accuracy. It needs truth; a pair that agrees
// because both are right is learning, not collapsing.
const (
	consensusAgreement = 0.9
	consensusAccuracy  = 0.5
)

func (d Diagnostics) consensus(pd PairDiag) bool {
	if pd.Agreement < consensusAgreement || d.Models[pd.Pair[0]].PseudoLabelAcc == nil || d.Models[pd.Pair[1]].PseudoLabelAcc == nil {
		return false
	}
	return d.pairLabelAcc(pd) <= consensusAccuracy
}

// Flagged reports whether either collapse rule holds for member i this
// round: its votes collapsed onto one answer (Collapsed), or it and a peer
// in consensus collapse.
func (d Diagnostics) Flagged(i int) bool {
	if i >= len(d.Models) {
		return false
	}
	if d.Collapsed(i) {
		return true
	}
	for _, pd := range d.Pairs {
		if (pd.Pair[0] == i || pd.Pair[1] == i) && max(pd.Pair[0], pd.Pair[1]) < len(d.Models) && d.consensus(pd) {
			return true
		}
	}
	return false
}

// pairLabelAcc is the mean pseudo-label accuracy of the pair's members.
func (d Diagnostics) pairLabelAcc(pd PairDiag) float64 {
	return (*d.Models[pd.Pair[0]].PseudoLabelAcc + *d.Models[pd.Pair[1]].PseudoLabelAcc) / 2
}
