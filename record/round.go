package record

import (
	"fmt"
)

// ModelRound is one member's numbers for a round.
type ModelRound struct {
	Name          string  `json:"name"`
	Loss          float64 `json:"loss"`
	KL            float64 `json:"kl"`
	ClipFrac      float64 `json:"clip_fraction"`
	GradNorm      float64 `json:"grad_norm"`
	LR            float64 `json:"learning_rate"`
	LogPMismatch  float64 `json:"logp_mismatch,omitempty"`
	GenTokens     int     `json:"generated_tokens"`
	GenFLOPs      float64 `json:"generation_flops"`
	UpdateFLOPs   float64 `json:"update_flops"`
	JudgeFLOPs    float64 `json:"judge_flops,omitempty"` // scoring passes this model ran: self-certainty, entropy, judging a peer
	GenSeconds    float64 `json:"generation_seconds"`
	UpdateSeconds float64 `json:"update_seconds"`
}

// FLOPs is everything the model computed in the round: generation,
// scoring and update.
func (m ModelRound) FLOPs() float64 { return m.GenFLOPs + m.UpdateFLOPs + m.JudgeFLOPs }

// Round is one round's record: every member's numbers and the
// diagnostics, as both drivers write it.
type Round struct {
	Round   int          `json:"round"`
	Reward  string       `json:"reward"`
	Models  []ModelRound `json:"models"`
	Diag    Diagnostics  `json:"diagnostics"`
	Seconds float64      `json:"seconds"`
	Stages  Stages       `json:"stage_seconds"`
}

// Stages is where a round's time went, in seconds, summed over members.
// Checkpoint and evaluation are not part of every round: their callers
// fill them in when they run.
type Stages struct {
	Generate   float64 `json:"generate"`
	Recompute  float64 `json:"logprob_recompute"` // old and reference log-probs before the update
	Intrinsic  float64 `json:"intrinsic"`         // judge, self-certainty, entropy scoring
	Grade      float64 `json:"grade"`
	Update     float64 `json:"update"` // the steps, without the recompute
	Checkpoint float64 `json:"checkpoint,omitempty"`
	Evaluate   float64 `json:"evaluate,omitempty"`
}

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
	// VoteShare is the mean over prompts of the plurality answer's share
	// of the prompt's samples (rl.Vote.Share; TTRL's majority ratio):
	// how sure the member is of its own vote, right or wrong. Absent from
	// records written before it.
	VoteShare *float64 `json:"vote_share,omitempty"`
	// Against held-out truth, when the prompts have it (diagnostic only).
	PseudoLabelAcc *float64 `json:"pseudo_label_accuracy,omitempty"` // labeled prompts whose label is right
	SampleAcc      *float64 `json:"sample_accuracy,omitempty"`       // samples with the right answer
	MajAcc         *float64 `json:"maj_accuracy,omitempty"`          // prompts whose plurality is right
}

// DiagnosticPlot is how the report draws one member diagnostic over
// rounds (mean over members and seeds): a diagnostic's field above and its
// row here are all the report needs of it.
type DiagnosticPlot struct {
	Title, Caption, Unit string
	Pick                 func(d ModelDiag) (float64, bool) // false: the record lacks it
	// WhereRecorded draws the plot only when some record has the
	// diagnostic: one added after records were written leaves their
	// reports as they were.
	WhereRecorded bool
}

// DiagnosticPlots are the round diagnostics the report plots, in order.
var DiagnosticPlots = []DiagnosticPlot{
	{Title: "answer entropy", Caption: "entropy of the answers sampled per prompt: self-reward collapse shows as a fall towards 0", Unit: "nats",
		Pick: always(func(d ModelDiag) float64 { return d.AnswerEntropy })},
	{Title: "distinct answers", Caption: "distinct answers among a prompt's samples", Unit: "answers",
		Pick: always(func(d ModelDiag) float64 { return d.DistinctAnswers })},
	{Title: "modal answer share (collapse)", Caption: "share of a round's prompts whose vote is the member's most common answer: near 1, collapsed onto one answer across prompts", Unit: "share",
		Pick: always(func(d ModelDiag) float64 { return d.ModalShare })},
	{Title: "pseudo-label accuracy", Caption: "how often a member's label was right (a diagnostic: labels never reach label-free rewards)", Unit: "accuracy",
		Pick: present(func(d ModelDiag) *float64 { return d.PseudoLabelAcc })},
	{Title: "vote share (self-consistency)", Caption: "share of a prompt's samples that give the member's own plurality answer: towards 1 with flat accuracy, the member grows sure of its errors", Unit: "share",
		Pick: present(func(d ModelDiag) *float64 { return d.VoteShare }), WhereRecorded: true},
}

func always(f func(ModelDiag) float64) func(ModelDiag) (float64, bool) {
	return func(d ModelDiag) (float64, bool) { return f(d), true }
}

func present(f func(ModelDiag) *float64) func(ModelDiag) (float64, bool) {
	return func(d ModelDiag) (float64, bool) {
		if v := f(d); v != nil {
			return *v, true
		}
		return 0, false
	}
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
