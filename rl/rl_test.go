package rl

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// g builds a group from answers ("" = unparseable).
func g(answers ...string) Group {
	out := make(Group, len(answers))
	for i, a := range answers {
		out[i] = Sample{Answer: a, Tokens: 10}
	}
	return out
}

func TestPlurality(t *testing.T) {
	for _, tc := range []struct {
		name      string
		g         Group
		threshold float64
		want      Vote
	}{
		// The share is over all G samples, unparseable ones included (TTRL).
		{"clear", g("1", "1", "2", ""), 0, Vote{Answer: "1", Share: 0.5, Labeled: true}},
		// A tie labels nothing: no answer wins by its spelling.
		{"tie", g("7", "3", "7", "3"), 0, Vote{Share: 0.5, Tie: true}},
		{"tie of numbers", g("12", "7"), 0, Vote{Share: 0.5, Tie: true}},
		{"nothing parsed", g("", ""), 0, Vote{}},
		{"below threshold", g("1", "2", "3", "1"), 0.6, Vote{Answer: "1", Share: 0.5}},
		{"at threshold", g("1", "1", "2", ""), 0.5, Vote{Answer: "1", Share: 0.5, Labeled: true}},
		// One parseable sample of 8 has share 1/8: it does not pass 0.9.
		{"one parseable of 8", g("5", "", "", "", "", "", "", ""), 0.9, Vote{Answer: "5", Share: 1.0 / 8}},
	} {
		if got := Plurality(tc.g, tc.threshold); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// rewardsOf runs a strategy on one prompt per model.
func rewardsOf(t *testing.T, name string, threshold float64, groups ...Group) [][]float64 {
	t.Helper()
	s, err := NewStrategy(name)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Threshold: threshold}
	for _, gr := range groups {
		in.Rollouts = append(in.Rollouts, []Group{gr})
	}
	out, err := s.Reward(in)
	if err != nil {
		t.Fatal(err)
	}
	var r [][]float64
	for i := range groups {
		r = append(r, out.Rewards[i][0])
	}
	return r
}

func TestVoteStrategies(t *testing.T) {
	a := g("1", "1", "2", "")    // votes 1 (share 1/2)
	b := g("2", "2", "2", "1")   // votes 2 (share 3/4)
	c := g("1", "3", "3", "3")   // votes 3
	u := g("", "", "", "")       // unlabeled
	tie := g("4", "5", "4", "5") // a tie: unlabeled
	for _, tc := range []struct {
		name, mode string
		threshold  float64
		groups     []Group
		want       [][]float64
	}{
		// N=2: each labels the other.
		{"ring N=2", PeerRing, 0, []Group{a, b}, [][]float64{{0, 0, 1, 0}, {0, 0, 0, 1}}},
		// N=3: 0 <- 2 (votes 3), 1 <- 0 (votes 1), 2 <- 1 (votes 2).
		{"ring N=3", PeerRing, 0, []Group{a, b, c}, [][]float64{{0, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 0, 0}}},
		// predecessor unlabeled -> all zero
		{"ring unlabeled peer", PeerRing, 0, []Group{a, u}, [][]float64{{0, 0, 0, 0}, {0, 0, 0, 0}}},
		// threshold: b's share 3/4 passes 0.7; a's 2/3 does not, so model 1 gets nothing
		{"ring threshold", PeerRing, 0.7, []Group{a, b}, [][]float64{{0, 0, 1, 0}, {0, 0, 0, 0}}},
		// majority N=3: peers of 0 vote {2, 3}: no strict majority; peers of 1 vote {1, 3}: none;
		// peers of 2 vote {1, 2}: none.
		{"majority split", PeerMajority, 0, []Group{a, b, c}, [][]float64{{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}},
		// majority N=3 with agreeing peers: model 2's peers both vote 1.
		{"majority agree", PeerMajority, 0, []Group{a, a, c}, [][]float64{{0, 0, 0, 0}, {0, 0, 0, 0}, {1, 0, 0, 0}}},
		// majority N=4: model 3's peers vote {1, 2, 1} -> 1 (2 of 3 > half).
		{"majority N=4", PeerMajority, 0, []Group{a, b, a, c}, [][]float64{{0, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 0, 0}, {1, 0, 0, 0}}},
		// an unlabeled peer abstains but counts among the N-1: model 1's one
		// labeled peer of two is no majority, so one voter of three cannot decide.
		{"majority unlabeled peer", PeerMajority, 0, []Group{a, b, u}, [][]float64{{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}},
		// both peers of model 0 vote 1 while model 0 itself votes 9.
		{"majority two of two", PeerMajority, 0, []Group{g("1", "9", "9", "9"), a, a}, [][]float64{{1, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}},
		// a tied peer abstains: model 2's peers are {tie, 1}.
		{"majority tie", PeerMajority, 0, []Group{tie, a, b}, [][]float64{{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}},
		{"self-vote", SelfVote, 0, []Group{a, b}, [][]float64{{1, 1, 0, 0}, {1, 1, 1, 0}}},
		{"self-vote tie", SelfVote, 0, []Group{tie}, [][]float64{{0, 0, 0, 0}}},
		// model 0's predecessor ties 4-5: no label (the old rule picked "4" by spelling).
		{"ring tied predecessor", PeerRing, 0, []Group{g("4", "4", "5", "1"), tie}, [][]float64{{0, 0, 0, 0}, {1, 0, 1, 0}}},
	} {
		got := rewardsOf(t, tc.mode, tc.threshold, tc.groups...)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: rewards %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestIntrinsicAndGroundTruth(t *testing.T) {
	grp := Group{{Answer: "1", SelfCertainty: 0.3, NegEntropy: -1.5, JudgeScore: 0.9}, {Answer: "2", SelfCertainty: 0.7, NegEntropy: -0.5}}
	if r := rewardsOf(t, SelfCertainty, 0, grp); !reflect.DeepEqual(r, [][]float64{{0.3, 0.7}}) {
		t.Errorf("self-certainty %v", r)
	}
	if r := rewardsOf(t, Entropy, 0, grp); !reflect.DeepEqual(r, [][]float64{{-1.5, -0.5}}) {
		t.Errorf("entropy %v", r)
	}
	if r := rewardsOf(t, PeerJudge, 0, grp); !reflect.DeepEqual(r, [][]float64{{0.9, 0}}) {
		t.Errorf("peer-judge %v", r)
	}
	out, err := NewGroundTruth([]string{"2", ""}).Reward(Input{Rollouts: [][]Group{{g("2", "1", "2"), g("5", "5", "5")}}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Rewards[0], [][]float64{{1, 0, 1}, {0, 0, 0}}) {
		t.Errorf("ground truth %v (a prompt without a label gets 0)", out.Rewards[0])
	}
	if _, err := NewStrategy("bogus"); err == nil || !strings.Contains(err.Error(), PeerRing) {
		t.Errorf("unknown mode error %v should list the modes", err)
	}
	if _, err := (voteStrategy{PeerRing, ringLabel}).Reward(Input{Rollouts: [][]Group{{g("1")}}}); err == nil {
		t.Error("peer-ring with one model was accepted")
	}
}

func TestAdvantages(t *testing.T) {
	r := [][]float64{{1, 0, 0, 1}, {1, 1, 1, 1}}
	// group 0: mean .5, unbiased std sqrt(1/3)
	s := math.Sqrt(1.0 / 3)
	want := [][]float64{{0.5 / (s + 1e-4), -0.5 / (s + 1e-4), -0.5 / (s + 1e-4), 0.5 / (s + 1e-4)}, {0, 0, 0, 0}}
	close2(t, "group", Advantages(r, ScaleGroup), want)
	// batch: std of all 8 rewards (six 1s, two 0s): mean .75, var = (6*.0625+2*.5625)/7 = 1.5/7
	bs := math.Sqrt(1.5 / 7)
	close2(t, "batch", Advantages(r, ScaleBatch), [][]float64{{0.5 / (bs + 1e-4), -0.5 / (bs + 1e-4), -0.5 / (bs + 1e-4), 0.5 / (bs + 1e-4)}, {0, 0, 0, 0}})
	close2(t, "none", Advantages(r, ScaleNone), [][]float64{{0.5, -0.5, -0.5, 0.5}, {0, 0, 0, 0}})
}

func close2(t *testing.T, name string, got, want [][]float64) {
	t.Helper()
	for i := range want {
		for j := range want[i] {
			if math.Abs(got[i][j]-want[i][j]) > 1e-12 {
				t.Fatalf("%s [%d][%d] = %v, want %v", name, i, j, got[i][j], want[i][j])
			}
		}
	}
}

func TestLossAggregation(t *testing.T) {
	// Two sequences, ratio 1 everywhere (logp == old), no KL: per-token loss is -A.
	seqs := []Seq{{LogP: []float64{-1, -2}, OldLogP: []float64{-1, -2}, Adv: 1}, {LogP: []float64{-1, -1, -1, -1}, OldLogP: []float64{-1, -1, -1, -1}, Adv: -0.5}}
	for _, tc := range []struct {
		loss string
		want float64
	}{
		{TokenMean, (-1*2 + 0.5*4) / 6.0},                 // sum / 6 tokens = 0
		{SeqMeanTokenMean, (-1 + 0.5) / 2.0},              // mean of per-seq means
		{SeqMeanTokenSumNorm, (-1*2 + 0.5*4) / (2 * 8.0)}, // sum / (2 seqs * L=8)
	} {
		st, _, err := GRPO{LossType: tc.loss, Epsilon: 0.2, MaxNewTokens: 8}.Loss(seqs)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(st.Loss-tc.want) > 1e-12 {
			t.Errorf("%s: loss %v, want %v", tc.loss, st.Loss, tc.want)
		}
	}
	// Clipping: ratio e^0.5 = 1.65 > 1.2 with A > 0: clipped, no gradient; with
	// A < 0 the unclipped term is the minimum and the gradient flows.
	up := []Seq{{LogP: []float64{0.5}, OldLogP: []float64{0}, Adv: 1}, {LogP: []float64{0.5}, OldLogP: []float64{0}, Adv: -1}}
	st, grads, _ := GRPO{LossType: TokenMean, Epsilon: 0.2}.Loss(up)
	if grads[0][0] != 0 || grads[1][0] == 0 || math.Abs(st.ClipFrac-0.5) > 1e-12 {
		t.Errorf("clip: grads %v, clip fraction %v", grads, st.ClipFrac)
	}
	// epsilon_high widens the upper clip: ratio 1.65 < 1+0.7 is not clipped.
	_, grads, _ = GRPO{LossType: TokenMean, Epsilon: 0.2, EpsilonHigh: 0.7}.Loss(up[:1])
	if grads[0][0] == 0 {
		t.Error("epsilon_high did not widen the clip")
	}
}

// TestLossGradientMatchesFiniteDifferences checks dLoss/dlogp for every
// aggregation, with KL, on random values (ratios on both sides of the clip).
func TestLossGradientMatchesFiniteDifferences(t *testing.T) {
	seqs := []Seq{
		{LogP: []float64{-0.3, -1.1, -2.0}, OldLogP: []float64{-0.35, -0.9, -2.5}, RefLogP: []float64{-0.4, -1.0, -1.9}, Adv: 0.8},
		{LogP: []float64{-0.7, -0.1}, OldLogP: []float64{-0.6, -0.4}, RefLogP: []float64{-0.5, -0.3}, Adv: -1.3},
	}
	for _, loss := range []string{TokenMean, SeqMeanTokenMean, SeqMeanTokenSumNorm} {
		cfg := GRPO{LossType: loss, Epsilon: 0.2, EpsilonHigh: 0.28, Beta: 0.04, MaxNewTokens: 5}
		_, grads, err := cfg.Loss(seqs)
		if err != nil {
			t.Fatal(err)
		}
		const h = 1e-6 // float64 central differences: error ~h^2 and 1e-16/h, far below 1e-7
		for i := range seqs {
			for j := range seqs[i].LogP {
				orig := seqs[i].LogP[j]
				seqs[i].LogP[j] = orig + h
				lp, _, _ := cfg.Loss(seqs)
				seqs[i].LogP[j] = orig - h
				lm, _, _ := cfg.Loss(seqs)
				seqs[i].LogP[j] = orig
				num := (lp.Loss - lm.Loss) / (2 * h)
				if math.Abs(num-grads[i][j]) > 1e-7 {
					t.Errorf("%s seq %d token %d: analytic %v, numeric %v", loss, i, j, grads[i][j], num)
				}
			}
		}
	}
}

func TestDiagnose(t *testing.T) {
	rollouts := [][]Group{{g("1", "1", "2", ""), g("5", "5", "5", "5")}, {g("1", "3", "3", "3"), g("5", "", "", "")}}
	s, _ := NewStrategy(PeerRing)
	out, _ := s.Reward(Input{Rollouts: rollouts})
	truth := []string{"1", "5"}
	d := Diagnose(rollouts, out, truth, 0)
	m0 := d.Models[0]
	// model 0 learns from model 1's votes: prompt 0 label 3 (wrong), prompt 1 label 5 (right)
	if *m0.PseudoLabelAcc != 0.5 || m0.LabeledFrac != 1 || m0.ParseRate != 7.0/8 {
		t.Errorf("model 0: %+v", m0)
	}
	// rewards of model 0: prompt 0 all zero (no 3s) -> zero variance; prompt 1 all 1 -> zero variance
	if m0.ZeroVarFrac != 1 {
		t.Errorf("zero-variance fraction %v, want 1", m0.ZeroVarFrac)
	}
	// answer entropy prompt 1 of model 0 is 0 (collapsed); prompt 0: {1:2, 2:1, none:1}/4
	h0 := -(0.5*math.Log(0.5) + 2*0.25*math.Log(0.25))
	if math.Abs(m0.AnswerEntropy-h0/2) > 1e-12 || m0.DistinctAnswers != 1.5 {
		t.Errorf("entropy %v (want %v), distinct %v", m0.AnswerEntropy, h0/2, m0.DistinctAnswers)
	}
	// vote share: model 0's votes hold 2/4 and 4/4 of their samples,
	// model 1's 3/4 and 1/4 (unparsed samples count in the whole)
	if *m0.VoteShare != 0.75 || *d.Models[1].VoteShare != 0.5 {
		t.Errorf("vote shares %v and %v, want 0.75 and 0.5", *m0.VoteShare, *d.Models[1].VoteShare)
	}
	// maj correctness: model 0 {T, T}, model 1 {F, T}: agreement on prompt 1 only
	p := d.Pairs[0]
	if p.Agreement != 0.5 || *p.Complementarity != 0.5 || *d.Models[1].MajAcc != 0.5 {
		t.Errorf("pair %+v", p)
	}
	if d2 := Diagnose(rollouts, out, nil, 0); d2.Models[0].PseudoLabelAcc != nil || d2.Pairs[0].Kappa != nil {
		t.Error("accuracy figures without truth")
	}
}

func TestLRSchedule(t *testing.T) {
	if lr := LRAt(1, 5, 10, 110, 0.1); lr != 0.5 {
		t.Errorf("warmup: %v", lr)
	}
	if lr := LRAt(1, 10, 10, 110, 0.1); lr != 1 {
		t.Errorf("peak: %v", lr)
	}
	if lr := LRAt(1, 60, 10, 110, 0.1); math.Abs(lr-0.55) > 1e-12 {
		t.Errorf("midpoint: %v, want 0.55", lr)
	}
	if lr := LRAt(1, 110, 10, 110, 0.1); math.Abs(lr-0.1) > 1e-12 {
		t.Errorf("end: %v", lr)
	}
}

// TestTruthNeverReachesLabelFreeRewards: the label-free strategies give the
// same rewards whatever the prompts' held-out truth is; only ground truth
// changes.
func TestTruthNeverReachesLabelFreeRewards(t *testing.T) {
	rollouts := [][]Group{
		{g("1", "1", "2", ""), g("5", "5", "3", "5")},
		{g("1", "3", "3", "3"), g("5", "", "", "4")},
		{g("2", "2", "1", "1"), g("4", "4", "4", "5")},
	}
	for gi := range rollouts {
		for p := range rollouts[gi] {
			for k := range rollouts[gi][p] {
				rollouts[gi][p][k].SelfCertainty, rollouts[gi][p][k].NegEntropy, rollouts[gi][p][k].JudgeScore = float64(k), -float64(p), 0.5
			}
		}
	}
	truthA := []Prompt{{ID: "a", Views: []string{"q"}, Truth: "1"}, {ID: "b", Views: []string{"q"}, Truth: "5"}}
	truthB := []Prompt{{ID: "a", Views: []string{"q"}, Truth: "3"}, {ID: "b", Views: []string{"q"}, Truth: "4"}}
	for _, name := range StrategyNames {
		c := Config{Reward: name}
		sa, err := StrategyFor(c, truthA)
		if err != nil {
			t.Fatal(err)
		}
		sb, _ := StrategyFor(c, truthB)
		oa, err := sa.Reward(Input{Rollouts: rollouts})
		if err != nil {
			t.Fatal(err)
		}
		ob, _ := sb.Reward(Input{Rollouts: rollouts})
		same := reflect.DeepEqual(oa.Rewards, ob.Rewards)
		if name == GroundTruthRL && same {
			t.Errorf("ground truth ignored the labels")
		}
		if name != GroundTruthRL && !same {
			t.Errorf("%s: rewards changed with the held-out truth", name)
		}
	}
}

// TestAnswerEntropyIsOrderFree: the entropy sums in sorted order, so every
// permutation of the answers gives the same bits.
func TestAnswerEntropyIsOrderFree(t *testing.T) {
	answers := []string{"1", "22", "", "3", "1", "5", "", "7", "22", "9", "11", "1"}
	h0, d0 := answerEntropy(answers)
	for i := 0; i < 50; i++ {
		perm := append([]string(nil), answers...)
		for j := range perm {
			k := (j*7 + i*13) % len(perm)
			perm[j], perm[k] = perm[k], perm[j]
		}
		if h, d := answerEntropy(perm); h != h0 || d != d0 {
			t.Fatalf("permutation %d: entropy %v distinct %d, want %v %d", i, h, d, h0, d0)
		}
	}
	if d0 != 7 {
		t.Errorf("distinct answers %d, want 7", d0)
	}
}

// TestReadmeWorkedExample is docs/rewards.md's worked example of the vote rules
// (G = 8, threshold 0.5); "-" there is a sample with no answer.
func TestReadmeWorkedExample(t *testing.T) {
	A := g("7", "7", "7", "7", "7", "12", "", "")
	B := g("12", "12", "12", "7", "7", "7", "", "")
	C := g("7", "", "", "", "", "", "", "")
	votes := []Vote{Plurality(A, 0.5), Plurality(B, 0.5), Plurality(C, 0.5)}
	want := []Vote{{Answer: "7", Share: 5.0 / 8, Labeled: true}, {Share: 3.0 / 8, Tie: true}, {Answer: "7", Share: 1.0 / 8}}
	if !reflect.DeepEqual(votes, want) {
		t.Errorf("votes %+v, want %+v", votes, want)
	}
	zero := []float64{0, 0, 0, 0, 0, 0, 0, 0}
	for _, tc := range []struct {
		mode string
		want [][]float64
	}{
		{PeerRing, [][]float64{zero, {0, 0, 0, 1, 1, 1, 0, 0}, zero}},
		{PeerMajority, [][]float64{zero, zero, zero}},
		{SelfVote, [][]float64{{1, 1, 1, 1, 1, 0, 0, 0}, zero, zero}},
	} {
		if got := rewardsOf(t, tc.mode, 0.5, A, B, C); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.mode, got, tc.want)
		}
	}
}
