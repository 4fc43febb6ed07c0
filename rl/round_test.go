package rl

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/generate"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/tokenizer"
)

// additions are sums of digits below 5: 25 facts, few enough that a tiny
// model learns them partly in seconds and sees each one every round.
func additions() []Prompt {
	var ps []Prompt
	for a := 0; a < 5; a++ {
		for b := 0; b < 5; b++ {
			ps = append(ps, Prompt{ID: fmt.Sprintf("%d+%d", a, b), Views: []string{fmt.Sprintf("%d+%d=?", a, b)}, Truth: fmt.Sprint(a + b)})
		}
	}
	return ps
}

func greedyPass(t *testing.T, m *Member, ps []Prompt) float64 {
	t.Helper()
	var reqs []generate.Request
	for _, p := range ps {
		ids, _ := m.Tok.Encode(evaluate.PromptText(p.Views[0]))
		reqs = append(reqs, generate.Request{Prompt: ids, Params: generate.Params{MaxNewTokens: 20}})
	}
	outs, err := (&generate.Generator{Model: m.Model, Tok: m.Tok}).Run(reqs)
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for i, o := range outs {
		if datasets.Grade(o.Text, ps[i].Truth) == datasets.Correct {
			ok++
		}
	}
	return float64(ok) / float64(len(ps))
}

// supervised trains on "The answer is c." completions until greedy pass@1
// is partial (between lo and hi).
func supervised(t *testing.T, m *Member, ps []Prompt, lo, hi float64) float64 {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	for step := 1; step <= 2000; step++ {
		var cs []*Completion
		for i := 0; i < 32; i++ {
			p := ps[r.IntN(len(ps))]
			prompt, _ := m.Tok.Encode(evaluate.PromptText(p.Views[0]))
			comp, _ := m.Tok.Encode(" The answer is " + p.Truth + ".")
			cs = append(cs, &Completion{Prompt: prompt, Tokens: append(comp, m.Tok.EOS())})
		}
		sb := buildBatch(cs, m.Tok.EOS())
		sb.b.Weights = make([]float32, len(sb.b.Inputs))
		for i := range cs {
			for t := sb.start[i]; t < sb.end[i]; t++ {
				sb.b.Weights[i*sb.b.T+t] = 1
			}
		}
		if _, err := m.Model.TrainStep(sb.b, model.DefaultOptim(2e-3)); err != nil {
			t.Fatal(err)
		}
		if step%20 == 0 {
			if acc := greedyPass(t, m, ps); acc >= lo {
				if acc > hi {
					t.Fatalf("supervised warm-up overshot: pass@1 %.2f > %.2f", acc, hi)
				}
				return acc
			}
		}
	}
	t.Fatal("the tiny model never reached partial competence")
	return 0
}

// TestGroundTruthRLImprovesPassAt1 is the end-to-end check of the round: a
// tiny model that partly solves single-digit sums gets better with
// ground-truth rewards within a bounded number of rounds (fixed seeds).
func TestGroundTruthRLImprovesPassAt1(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end RL test")
	}
	tok := tokenizer.NewBytes()
	m, err := model.New(cpu.New(0), model.Config{Family: model.Llama, Layers: 2, Dim: 64, Heads: 4, KVHeads: 2, Vocab: tok.VocabSize(), MaxSeq: 64}, 7)
	if err != nil {
		t.Fatal(err)
	}
	mem := &Member{Name: "tiny", Model: m, Tok: tok}
	ps := additions()
	before := supervised(t, mem, ps, 0.3, 0.7) // above 0.2: answering "4" to everything scores 5/25
	c := Config{Reward: GroundTruthRL, NumGenerations: 8, Temperature: 1, MaxNewTokens: 20,
		GRPO:         GRPO{ScaleRewards: ScaleGroup, LossType: TokenMean, Epsilon: 0.2, NumIterations: 1},
		LearningRate: 1e-3, TotalSteps: 40, MinLRRatio: 1, Optim: model.DefaultOptim(0), MicroBatch: 64, Seed: 5}
	c.Optim.WeightDecay = 0
	var after float64
	for round := 0; round < 40; round++ {
		met, err := Round([]*Member{mem}, ps, c, round, round, nil)
		if err != nil {
			t.Fatal(err)
		}
		if round%5 == 4 {
			after = greedyPass(t, mem, ps)
			t.Logf("round %d: reward %.2f, pass@1 %.2f (before RL %.2f)", round, met.Diag.Models[0].RewardMean, after, before)
			if after >= before+0.15 {
				return
			}
		}
	}
	t.Fatalf("pass@1 went from %.2f to %.2f in 40 rounds of ground-truth RL; want +0.15", before, after)
}

// TestScoringFLOPsAreCounted: rewards that need a scoring pass (entropy,
// self-certainty: the member reads its own samples; peer-judge: a peer
// reads them) charge that pass's forward FLOPs to the member that ran it,
// and rewards without one charge nothing.
func TestScoringFLOPsAreCounted(t *testing.T) {
	tok := tokenizer.NewBytes()
	var cohort []*Member
	for i, name := range []string{"a", "b"} {
		m, err := model.New(cpu.New(0), model.Config{Family: model.Llama, Layers: 1, Dim: 32, Heads: 2, KVHeads: 1, Vocab: tok.VocabSize(), MaxSeq: 64}, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		cohort = append(cohort, &Member{Name: name, Model: m, Tok: tok})
	}
	ps := additions()[:4]
	for _, mode := range []string{Entropy, SelfCertainty, PeerJudge, GroundTruthRL, PeerRing} {
		c := Config{Reward: mode, NumGenerations: 2, Temperature: 1, MaxNewTokens: 8,
			GRPO:         GRPO{ScaleRewards: ScaleGroup, LossType: TokenMean, Epsilon: 0.2, NumIterations: 1},
			LearningRate: 1e-4, TotalSteps: 1, MinLRRatio: 1, Optim: model.DefaultOptim(0), MicroBatch: 8, Seed: 5}
		met, err := Round(cohort, ps, c, 0, 0, nil)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		for i, mr := range met.Models {
			switch mode {
			case Entropy, SelfCertainty:
				// A forward pass over its own samples: at least the
				// generated tokens' share of generation's cost.
				if mr.JudgeFLOPs <= 0 || mr.JudgeFLOPs > mr.GenFLOPs*1.0001 {
					t.Errorf("%s member %d: scoring %.3g FLOPs, generation %.3g", mode, i, mr.JudgeFLOPs, mr.GenFLOPs)
				}
			case PeerJudge: // untrained: few samples have an answer to judge
			default:
				if mr.JudgeFLOPs != 0 {
					t.Errorf("%s member %d: %.3g scoring FLOPs without a scoring pass", mode, i, mr.JudgeFLOPs)
				}
			}
		}
	}
	// A judge reads each distinct (prompt, answer) once: two statements
	// here, the unanswered sample not at all.
	ro := Rollout{{{Answer: "1"}, {Answer: "1"}}, {{Answer: "2"}, {Answer: ""}}}
	_, flops, err := JudgeScores(cohort[1], ps[:2], ro, 8)
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	for p, a := range []string{"1", "2"} {
		prompt, _ := tok.Encode(evaluate.PromptText(ps[p].Views[0]))
		stmt, _ := tok.Encode(" The answer is " + a + ".")
		want += ForwardFLOPs(cohort[1].Model, []*Completion{{Prompt: prompt, Tokens: stmt}})
	}
	if flops != want || want <= 0 {
		t.Errorf("judging two statements cost %.4g FLOPs, want %.4g", flops, want)
	}
}

// TestFrozenPeerIsNotUpdated: in a round with a frozen member, its weights
// are the same bits after as before and it is charged no update, while
// the other member trains (under the entropy reward, which gives random
// tiny models a signal without parsed answers).
func TestFrozenPeerIsNotUpdated(t *testing.T) {
	tok := tokenizer.NewBytes()
	newMember := func(name string, seed uint64, frozen bool) *Member {
		m, err := model.New(cpu.New(2), model.Config{Family: model.Llama, Layers: 1, Dim: 32, Heads: 2, KVHeads: 1, Vocab: tok.VocabSize(), MaxSeq: 48}, seed)
		if err != nil {
			t.Fatal(err)
		}
		return &Member{Name: name, Model: m, Tok: tok, Frozen: frozen}
	}
	weights := func(m *Member) []float32 {
		w := make([]float32, m.Model.Params().Len())
		m.Model.Backend().Download(w, m.Model.Params())
		return w
	}
	learner, peer := newMember("learner", 1, false), newMember("peer", 2, true)
	before, peerBefore := weights(learner), weights(peer)
	c := Config{Reward: Entropy, NumGenerations: 4, Temperature: 1, MaxNewTokens: 6,
		GRPO:         GRPO{ScaleRewards: ScaleNone, LossType: TokenMean, Epsilon: 0.2, NumIterations: 1},
		LearningRate: 1e-2, TotalSteps: 1, MinLRRatio: 1, Optim: model.DefaultOptim(0), MicroBatch: 64, Seed: 3}
	met, err := Round([]*Member{learner, peer}, additions()[:4], c, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(weights(peer), peerBefore) {
		t.Error("the frozen peer's weights changed")
	}
	if met.Models[1].UpdateFLOPs != 0 || met.Models[1].LR != 0 {
		t.Errorf("the frozen peer was charged an update: %+v", met.Models[1])
	}
	if slices.Equal(weights(learner), before) || met.Models[0].UpdateFLOPs == 0 {
		t.Errorf("the learner did not train: %+v", met.Models[0])
	}
}
