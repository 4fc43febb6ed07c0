package rl

import (
	"math"
	"sort"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/record"
)

// Diagnose computes diagnostics from rollouts, the strategy output and,
// optionally, the normalised truth (nil: no accuracy figures).
func Diagnose(rollouts [][]Group, out Output, truth []string, threshold float64) record.Diagnostics {
	var d record.Diagnostics
	correct := make([][]bool, len(rollouts)) // per model, per prompt: plurality right
	votes := make([][]Vote, len(rollouts))
	for i, m := range rollouts {
		var md record.ModelDiag
		var all []float64
		var labeled, parsed, samples, lengths, pseudoN, pseudoOK, sampleOK, majOK int
		var voteShare float64
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
			voteShare += v.Share
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
			vs := voteShare / P
			md.VoteShare = &vs
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
func pairDiags(votes [][]Vote, correct [][]bool, labelled bool) []record.PairDiag {
	var out []record.PairDiag
	for i := range votes {
		for j := i + 1; j < len(votes); j++ {
			pd := record.PairDiag{I: i, J: j, Pair: [2]int{i, j}}
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
				k, c := record.CohenKappa(correct[i], correct[j]), record.Complementarity(correct[i], correct[j])
				pd.Kappa, pd.Complementarity = &k, &c
			}
			out = append(out, pd)
		}
	}
	return out
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
