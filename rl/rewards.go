package rl

import (
	"fmt"
	"math"
	"strings"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/spec"
)

// Sample is one completion as the reward strategies see it.
type Sample struct {
	Answer string // normalised final answer; "" when none could be extracted
	Tokens int    // completion length
	// Intrinsic signals over the completion's tokens (model's own distribution):
	SelfCertainty float64 // mean_t KL(uniform || p_t)
	NegEntropy    float64 // -mean_t H(p_t)
	// JudgeScore is a peer's score of this completion (peer-judge), in [0, 1].
	JudgeScore float64
}

// Group is the G samples of one prompt by one model.
type Group []Sample

// Vote is a model's plurality answer for one prompt.
type Vote struct {
	Answer  string  `json:"answer"`        // "" when no sample parsed or the top answers tie
	Share   float64 `json:"share"`         // votes for the top answer / all G samples (as TTRL)
	Labeled bool    `json:"labeled"`       // a unique top answer whose share passes the threshold
	Tie     bool    `json:"tie,omitempty"` // two or more answers share the top count: no label
}

// Plurality returns g's vote: the most common parseable answer and its share
// of all G samples, unparseable ones included (one parseable sample of 8 has
// share 1/8). When two or more answers share the top count the vote is a tie
// and labels nothing (no answer wins by its spelling). Below threshold, or with
// no parseable sample, the vote is unlabeled.
func Plurality(g Group, threshold float64) Vote {
	answers := make([]string, 0, len(g))
	for _, s := range g {
		answers = append(answers, s.Answer)
	}
	best, n, tie := datasets.MostCommon(answers)
	if n == 0 {
		return Vote{}
	}
	share := float64(n) / float64(len(g))
	if tie {
		return Vote{Share: share, Tie: true}
	}
	return Vote{Answer: best, Share: share, Labeled: share >= threshold}
}

// Input is what a strategy grades: rollouts[model][prompt] row-aligned
// prompts. It deliberately has no ground truth: only GroundTruth, built with
// the labels, can see them.
type Input struct {
	Rollouts  [][]Group
	Threshold float64 // self_consistency_threshold
}

// Output is per-sample rewards and the label each model trained against.
type Output struct {
	Rewards [][][]float64 // [model][prompt][sample]
	Labels  [][]Vote      // [model][prompt]; nil for intrinsic strategies
}

// Strategy turns rollouts into rewards.
type Strategy interface {
	Name() string
	Reward(in Input) (Output, error)
}

// Names of the strategies, as written in run configs (the spec's reward
// modes).
const (
	PeerRing      = spec.PeerRing
	PeerMajority  = spec.PeerMajority
	PeerJudge     = spec.PeerJudge
	GroundTruthRL = spec.GroundTruthRL
	SelfVote      = spec.SelfVote
	SelfCertainty = spec.SelfCertainty
	Entropy       = spec.Entropy
)

// StrategyNames lists every strategy.
var StrategyNames = spec.RewardModes

// NewStrategy returns a label-free strategy by name. Ground truth needs the
// labels and is built with NewGroundTruth.
func NewStrategy(name string) (Strategy, error) {
	switch name {
	case PeerRing:
		return voteStrategy{name, ringLabel}, nil
	case PeerMajority:
		return voteStrategy{name, majorityLabel}, nil
	case SelfVote:
		return voteStrategy{name, func(votes []Vote, i int) Vote { return votes[i] }}, nil
	case PeerJudge:
		return intrinsic{name, func(s Sample) float64 { return s.JudgeScore }}, nil
	case SelfCertainty:
		return intrinsic{name, func(s Sample) float64 { return s.SelfCertainty }}, nil
	case Entropy:
		return intrinsic{name, func(s Sample) float64 { return s.NegEntropy }}, nil
	case GroundTruthRL:
		return nil, fmt.Errorf("reward %q needs the labels: use NewGroundTruth", name)
	}
	return nil, fmt.Errorf("reward mode %q: unknown; have %s", name, strings.Join(StrategyNames, ", "))
}

// voteStrategy rewards a sample 1 when its answer equals the label chosen
// from the models' plurality votes for that prompt, 0 otherwise (and 0 for
// every sample of an unlabeled prompt).
type voteStrategy struct {
	name  string
	label func(votes []Vote, model int) Vote
}

func (v voteStrategy) Name() string { return v.name }

func (v voteStrategy) Reward(in Input) (Output, error) {
	N := len(in.Rollouts)
	if N == 0 {
		return Output{}, fmt.Errorf("%s: no models", v.name)
	}
	if N < 2 && v.name != SelfVote {
		return Output{}, fmt.Errorf("%s: needs at least 2 models, the cohort has %d", v.name, N)
	}
	P := len(in.Rollouts[0])
	out := Output{Rewards: make([][][]float64, N), Labels: make([][]Vote, N)}
	for i := range out.Rewards {
		if len(in.Rollouts[i]) != P {
			return Output{}, fmt.Errorf("%s: model %d has %d prompts, model 0 has %d", v.name, i, len(in.Rollouts[i]), P)
		}
		out.Rewards[i], out.Labels[i] = make([][]float64, P), make([]Vote, P)
	}
	votes := make([]Vote, N)
	for p := 0; p < P; p++ {
		for i := range votes {
			votes[i] = Plurality(in.Rollouts[i][p], in.Threshold)
		}
		for i := 0; i < N; i++ {
			lab := v.label(votes, i)
			out.Labels[i][p] = lab
			out.Rewards[i][p] = matchRewards(in.Rollouts[i][p], lab)
		}
	}
	return out, nil
}

func matchRewards(g Group, lab Vote) []float64 {
	r := make([]float64, len(g))
	if !lab.Labeled {
		return r
	}
	for k, s := range g {
		if s.Answer != "" && s.Answer == lab.Answer {
			r[k] = 1
		}
	}
	return r
}

// ringLabel: model i learns from model i-1 (wrapping), the released Co-RL code.
func ringLabel(votes []Vote, i int) Vote {
	return votes[(i-1+len(votes))%len(votes)]
}

// majorityLabel: the answer voted by strictly more than half of model i's
// N-1 peers. A peer whose own vote is unlabeled (tie, no parse, below
// threshold) abstains but still counts in the N-1, so with three models one
// labeled peer cannot decide alone.
func majorityLabel(votes []Vote, i int) Vote {
	var peers []string
	for j, v := range votes {
		if j != i && v.Labeled {
			peers = append(peers, v.Answer)
		}
	}
	best, n, _ := datasets.MostCommon(peers)
	if N := len(votes) - 1; 2*n > N {
		return Vote{Answer: best, Share: float64(n) / float64(N), Labeled: true}
	}
	return Vote{}
}

// intrinsic rewards each sample by a number the model or a judge computed.
type intrinsic struct {
	name string
	f    func(Sample) float64
}

func (s intrinsic) Name() string { return s.name }

func (s intrinsic) Reward(in Input) (Output, error) {
	out := Output{Rewards: make([][][]float64, len(in.Rollouts))}
	for i, m := range in.Rollouts {
		out.Rewards[i] = make([][]float64, len(m))
		for p, g := range m {
			r := make([]float64, len(g))
			for k, smp := range g {
				r[k] = s.f(smp)
				if math.IsNaN(r[k]) || math.IsInf(r[k], 0) {
					return Output{}, fmt.Errorf("%s: model %d prompt %d sample %d: reward %v", s.name, i, p, k, r[k])
				}
			}
			out.Rewards[i][p] = r
		}
	}
	return out, nil
}

// GroundTruth is RLVR: a sample earns 1 when its answer matches the label.
type GroundTruth struct {
	truth []string // normalised answers, row-aligned with the prompts
}

// NewGroundTruth builds the ground-truth baseline from normalised answers.
func NewGroundTruth(truth []string) GroundTruth { return GroundTruth{truth} }

// Name implements Strategy.
func (GroundTruth) Name() string { return GroundTruthRL }

// Reward implements Strategy.
func (gt GroundTruth) Reward(in Input) (Output, error) {
	out := Output{Rewards: make([][][]float64, len(in.Rollouts)), Labels: make([][]Vote, len(in.Rollouts))}
	for i, m := range in.Rollouts {
		if len(m) != len(gt.truth) {
			return Output{}, fmt.Errorf("ground-truth: model %d has %d prompts, %d labels", i, len(m), len(gt.truth))
		}
		out.Rewards[i], out.Labels[i] = make([][]float64, len(m)), make([]Vote, len(m))
		for p, g := range m {
			lab := Vote{Answer: gt.truth[p], Share: 1, Labeled: gt.truth[p] != ""}
			out.Labels[i][p] = lab
			out.Rewards[i][p] = matchRewards(g, lab)
		}
	}
	return out, nil
}
