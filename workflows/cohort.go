package workflows

import (
	"encoding/json"
	"errors"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/corl-project/corl/pipeline"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/stats"
)

// Names of the run's signals and query.
const (
	SignalPause   = "pause"
	SignalResume  = "resume"
	SignalStop    = "stop"
	QueryProgress = "progress"
)

// Search attributes the run keeps up to date (when UseSearchAttributes).
var (
	AttrRun    = temporal.NewSearchAttributeKeyKeyword("CorlRun")
	AttrReward = temporal.NewSearchAttributeKeyKeyword("CorlReward")
	AttrCohort = temporal.NewSearchAttributeKeyKeywordList("CorlCohort")
	AttrRound  = temporal.NewSearchAttributeKeyInt64("CorlRound")
)

// SearchAttributeTypes lists them for namespace registration.
var SearchAttributeTypes = map[string]enumspb.IndexedValueType{
	"CorlRun": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "CorlReward": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	"CorlCohort": enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST, "CorlRound": enumspb.INDEXED_VALUE_TYPE_INT,
}

// Input is the workflow's argument: the run spec itself (so a plain spec.json
// works with `temporal workflow start --input-file`), plus the state carried
// across continue-as-new.
type Input struct {
	spec.RunSpec
	State               *State `json:"state,omitempty"`
	UseSearchAttributes bool   `json:"use_search_attributes,omitempty"`
	// Timeouts (seconds; 0: defaults). Heartbeat catches a worker that dies
	// mid-activity; schedule-to-start catches a worker queue nobody polls.
	HeartbeatTimeout     int `json:"heartbeat_timeout_s,omitempty"`
	ScheduleToStartLimit int `json:"schedule_to_start_timeout_s,omitempty"`
	// ContinueAsNewEvery > 0 continues the run as new after every that many
	// rounds, besides when the server suggests it (tests, short histories).
	ContinueAsNewEvery int `json:"continue_as_new_every,omitempty"`
}

// UnmarshalJSON decodes the spec over its defaults (spec.RunSpec's own
// decoding: a spec.json that omits keys gets what `corl run` would give) and
// the workflow's fields beside it. Without it the embedded spec's method
// would decode the whole input and drop the carried state.
func (in *Input) UnmarshalJSON(b []byte) error {
	if err := in.RunSpec.UnmarshalJSON(b); err != nil {
		return err
	}
	var rest struct {
		State                *State `json:"state"`
		UseSearchAttributes  bool   `json:"use_search_attributes"`
		HeartbeatTimeout     int    `json:"heartbeat_timeout_s"`
		ScheduleToStartLimit int    `json:"schedule_to_start_timeout_s"`
		ContinueAsNewEvery   int    `json:"continue_as_new_every"`
	}
	if err := json.Unmarshal(b, &rest); err != nil {
		return err
	}
	in.State, in.UseSearchAttributes, in.HeartbeatTimeout, in.ScheduleToStartLimit, in.ContinueAsNewEvery =
		rest.State, rest.UseSearchAttributes, rest.HeartbeatTimeout, rest.ScheduleToStartLimit, rest.ContinueAsNewEvery
	return nil
}

// State is the run's durable state.
type State struct {
	Round           int            `json:"round"` // completed rounds
	Queue           []string       `json:"queue"` // worker queue holding each member ("" = not placed)
	Checkpoint      []string       `json:"checkpoint"`
	CheckpointRound []int          `json:"checkpoint_round"`
	Summaries       []RoundSummary `json:"summaries"` // the latest rounds
	Evals           []EvalSummary  `json:"evals"`
	Paused          bool           `json:"paused"`
	Stopping        bool           `json:"stopping"`
	Stage           string         `json:"stage"`
	Moves           int            `json:"moves"`                 // members re-placed after a lost worker
	Suspect         []string       `json:"suspect,omitempty"`     // queues whose worker timed out since the last placement
	NoEvalSet       bool           `json:"no_eval_set,omitempty"` // the data has no evaluation problems: nothing to evaluate
	Waits           []Wait         `json:"waits,omitempty"`       // what the current stage waits for
	Pool            *PoolView      `json:"pool,omitempty"`        // the pool as last listed while waiting
	Notes           []string       `json:"notes,omitempty"`       // the latest things that went wrong and were worked around
	// FLOPs per member and a budget's plan, kept across continue-as-new
	// as a local run keeps them.
	spec.Spend
	ComputeSeconds float64 `json:"compute_seconds"` // inside activities, summed over the critical path
	RoundSeconds   float64 `json:"round_seconds"`   // wall time of rounds
}

// RoundSummary is what the workflow keeps of a round.
type RoundSummary struct {
	Round   int                `json:"round"`
	Diag    record.Diagnostics `json:"diagnostics"`
	Loss    []float64          `json:"loss"`
	Seconds float64            `json:"seconds"`
	// Stages is the wall time of each stage of the round (the workflow's
	// clock: members in parallel), and of the checkpoint and evaluation
	// that followed it, when they did.
	Stages map[string]float64 `json:"stage_seconds,omitempty"`
}

// EvalSummary is a held-out evaluation: every member on the original
// wording and on its own view, and the cohort's vote.
type EvalSummary struct {
	Round          int                 `json:"round"`
	PassAt1        []float64           `json:"pass_at_1"`
	PassAt1OwnView []float64           `json:"pass_at_1_own_view"`
	PassAt1CI      []stats.Interval    `json:"pass_at_1_ci"`                // 95% bootstrap over problems
	SampledPassAt1 []float64           `json:"sampled_pass_at_1,omitempty"` // with eval.samples
	MajAtK         []float64           `json:"maj_at_k,omitempty"`
	Cohort         record.CohortResult `json:"cohort_vote"`
}

// Progress is the query result.
type Progress struct {
	Name     string        `json:"name"`
	Round    int           `json:"round"`
	Rounds   int           `json:"rounds"`
	Stage    string        `json:"stage"`
	Paused   bool          `json:"paused"`
	Stopping bool          `json:"stopping"`
	Members  []string      `json:"members"`
	Queues   []string      `json:"queues"`
	Last     *RoundSummary `json:"last,omitempty"`
	Evals    []EvalSummary `json:"evals"`
	Moves    int           `json:"moves"`
	Notes    []string      `json:"notes,omitempty"`
	Overhead float64       `json:"temporal_overhead"` // 1 - compute/wall over finished rounds
	Waits    []Wait        `json:"waits,omitempty"`
	Pool     *PoolView     `json:"pool,omitempty"`
}

// Result is the workflow's return value.
type Result struct {
	Rounds         int           `json:"rounds"`
	Members        []string      `json:"members,omitempty"`
	Checkpoints    []string      `json:"checkpoints"`
	Evals          []EvalSummary `json:"evals"`
	Stopped        bool          `json:"stopped"`
	Moves          int           `json:"moves"`
	ComputeSeconds float64       `json:"compute_seconds"`
	RoundSeconds   float64       `json:"round_seconds"`
	GenFLOPs       []float64     `json:"generation_flops"`
	UpdateFLOPs    []float64     `json:"update_flops"`
	JudgeFLOPs     []float64     `json:"judge_flops,omitempty"`
}

const keepSummaries = 20

// noteStage records a stage that followed the last round (checkpoint,
// evaluation) in its summary.
func noteStage(st *State, stage string, secs float64) {
	if len(st.Summaries) == 0 {
		return
	}
	last := &st.Summaries[len(st.Summaries)-1]
	if last.Stages == nil {
		last.Stages = map[string]float64{}
	}
	last.Stages[stage] += secs
}

func allPlaced(q []string) bool {
	for _, x := range q {
		if x == "" {
			return false
		}
	}
	return true
}

func allCheckpointed(st *State) bool {
	for _, r := range st.CheckpointRound {
		if r != st.Round {
			return false
		}
	}
	return true
}

// lost reports whether an activity error means the member's worker is gone
// (its queue is not polled, it stopped heartbeating, or it no longer holds
// the member), so the member must be placed again.
func lost(err error) bool {
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		return true
	}
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.Type() == pipeline.ErrMemberNotHere
}

// markLost clears placements whose activity failed with a lost-worker error
// and returns the first other error.
func markLost(st *State, errs []error) (anyLost bool, err error) {
	for i, e := range errs {
		if e == nil {
			continue
		}
		if lost(e) {
			var te *temporal.TimeoutError
			if errors.As(e, &te) && !slices.Contains(st.Suspect, st.Queue[i]) {
				st.Suspect = append(st.Suspect, st.Queue[i])
			}
			st.Queue[i] = ""
			st.Moves++
			anyLost = true
			continue
		}
		if err == nil {
			err = e
		}
	}
	return anyLost, err
}

// criticalPath is the compute time of a parallel stage: a worker runs its
// members' activities one after another, workers run side by side.
func criticalPath(queues []string, secs []float64) float64 {
	var longest float64
	for i := range queues {
		var sum float64
		for j := range queues {
			if queues[j] == queues[i] {
				sum += secs[j]
			}
		}
		longest = max(longest, sum)
	}
	return longest
}

// shiftToJudges attributes judge errors (indexed by target) to the judge.
func shiftToJudges(errs []error) []error {
	n := len(errs)
	out := make([]error, n)
	for i, e := range errs {
		out[(i-1+n)%n] = e
	}
	return out
}

func progressOf(s *spec.RunSpec, st *State) Progress {
	p := Progress{Name: s.Name, Round: st.Round, Rounds: s.Rounds, Stage: st.Stage, Paused: st.Paused, Stopping: st.Stopping,
		Members: s.MemberNames(), Queues: st.Queue, Evals: st.Evals, Moves: st.Moves, Notes: st.Notes, Waits: st.Waits, Pool: st.Pool}
	if len(st.Summaries) > 0 {
		last := st.Summaries[len(st.Summaries)-1]
		p.Last = &last
	}
	if st.RoundSeconds > 0 {
		p.Overhead = 1 - st.ComputeSeconds/st.RoundSeconds
	}
	return p
}
