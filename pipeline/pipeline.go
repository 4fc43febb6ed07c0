package pipeline

import (
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/stats"
)

// Activities by name, as the workers register them (the methods of
// activities.Activities, and ValidateSpec, run as a local activity).
const (
	Acquire      = "Acquire"
	Workers      = "Workers"
	Generate     = "Generate"
	Judge        = "Judge"
	Grade        = "Grade"
	Update       = "Update"
	Replay       = "Replay"
	Release      = "Release"
	Checkpoint   = "Checkpoint"
	Evaluate     = "Evaluate"
	RunResult    = "RunResult"
	ValidateSpec = "ValidateSpec"
	// WriteRecords writes a run's records to the store (RecordsInput).
	WriteRecords = "WriteRecords"
)

// Workflows by name, as the workers register them (the functions of
// package workflows) and the Temporal CLI starts them.
const (
	CohortRunWorkflow = "CohortRun"
	SweepWorkflow     = "Sweep"
)

// Task queues.
const (
	WorkflowQueue = "corl"     // workflows
	GPUPool       = "corl-gpu" // generate, update, evaluate: any GPU worker
	CPUPool       = "corl-cpu" // grading and aggregation
)

// Error types the workflow acts on.
const (
	// ErrMemberNotHere: the worker does not hold the member at the expected
	// round (it restarted, or the member moved); the workflow re-places it.
	ErrMemberNotHere = "MemberNotHere"
	// ErrBadSpec: the run spec cannot be executed; retrying will not help.
	ErrBadSpec = "BadSpec"
	// ErrNonFinite: NaN or Inf in a loss or gradient, naming model and round.
	ErrNonFinite = "NonFinite"
	// ErrWorkerFull: a placement asked a worker that already holds as many
	// members as it has slots; the workflow asks the next one.
	ErrWorkerFull = "WorkerFull"
	// ErrChecker: the task's checker crashed or answered what is not its
	// protocol; it would again (a checker that timed out is retried).
	ErrChecker = "CheckerFailed"
)

// RecordsInput asks for a run's records, built from its history so far,
// to be written to the store (blob.RecordsKey): at each evaluation and
// when the run ends, so that a report needs only the store.
type RecordsInput struct {
	Run  string `json:"run"`  // the run's workflow ID
	Done bool   `json:"done"` // the run has done what its spec asks
}

// MemberRef names one member of a run at a round.
type MemberRef struct {
	Spec   spec.RunSpec `json:"spec"`
	Member int          `json:"member"`
	Round  int          `json:"round"` // rounds completed before this call
	// Run keys the worker's state and every blob of the run: the workflow
	// ID (unique among open workflows, kept across continue-as-new), so two
	// live runs that share a spec name never share members or keys.
	Run string `json:"run,omitempty"`
}

// RunKey is the run's key: Run, or the spec's name for callers without a
// workflow (and histories recorded before Run existed).
func (r MemberRef) RunKey() string { return runKey(r.Run, r.Spec.Name) }

// RunKey is the graded run's key (see MemberRef.RunKey).
func (g GradeInput) RunKey() string { return runKey(g.Run, g.Spec.Name) }

func runKey(run, name string) string {
	if run != "" {
		return run
	}
	return name
}

// AcquireInput places a member on a worker.
type AcquireInput struct {
	MemberRef
	CheckpointKey   string `json:"checkpoint_key"` // last checkpoint the workflow recorded ("" = the base)
	CheckpointRound int    `json:"checkpoint_round"`
	// WithinSlots refuses (ErrWorkerFull) when this worker already holds
	// as many members as it has slots; without it the member shares.
	WithinSlots bool `json:"within_slots,omitempty"`
}

// WorkerInfo is one live GPU worker of the pool: its own queue and how
// many members it takes before the workflow looks elsewhere.
type WorkerInfo struct {
	Queue string `json:"queue"`
	Slots int    `json:"slots"`
}

// AcquireOutput says where the member now lives and at which round.
type AcquireOutput struct {
	Queue         string `json:"queue"`
	Round         int    `json:"round"`
	CheckpointKey string `json:"checkpoint_key"`
	// Note says what went wrong on the way, when it did (a corrupt
	// checkpoint skipped for an older one).
	Note string `json:"note,omitempty"`
}

// GenerateOutput summarises a member's rollout.
type GenerateOutput struct {
	Key       string  `json:"key"`
	Tokens    int     `json:"tokens"`
	ParseRate float64 `json:"parse_rate"`
	Seconds   float64 `json:"seconds"`
	FLOPs     float64 `json:"flops"`
	// JudgeFLOPs is the scoring pass over the samples that self-certainty
	// and entropy rewards need.
	JudgeFLOPs float64 `json:"judge_flops,omitempty"`
}

// JudgeInput has member Judge score member Target's rollout.
type JudgeInput struct {
	MemberRef        // the judge
	Target    int    `json:"target"`
	Key       string `json:"key"` // target's rollout
}

// GradeInput grades a round from the members' rollouts.
type GradeInput struct {
	Spec      spec.RunSpec `json:"spec"`
	Run       string       `json:"run,omitempty"` // see MemberRef.Run
	Round     int          `json:"round"`
	Rollouts  []string     `json:"rollouts"`
	JudgeKeys []string     `json:"judge_keys,omitempty"`
}

// GradeOutput is the round's diagnostics; advantages stay in the blob.
type GradeOutput struct {
	Key     string             `json:"key"`
	Diag    record.Diagnostics `json:"diagnostics"`
	Seconds float64            `json:"seconds"`
	// JudgeFLOPs is, per member, what judging its peer's samples cost
	// (peer-judge), read from the judges' blobs: the judge activity returns
	// only its key.
	JudgeFLOPs []float64 `json:"judge_flops,omitempty"`
}

// UpdateOutput reports a member's policy update.
type UpdateOutput struct {
	Stats   record.UpdateStats `json:"stats"`
	Seconds float64            `json:"seconds"`
	FLOPs   float64            `json:"flops"`
}

// ReplayInput re-applies the updates of rounds [From, To) from stored
// rollouts and grades, bringing a member restored from an older checkpoint
// back to the run's round with bitwise the same weights.
type ReplayInput struct {
	MemberRef
	From, To int
}

// EvalOutput is a member's held-out evaluation.
type EvalOutput struct {
	PassAt1 float64            `json:"pass_at_1"` // on the original wording
	ByTask  map[string]float64 `json:"by_task"`
	Correct []bool             `json:"correct"`
	Answers []string           `json:"answers"` // normalised greedy answers
	// The member's own view of the problems (the wording it trains on):
	// equal to PassAt1 for view 0.
	View           int     `json:"view"`
	PassAt1OwnView float64 `json:"pass_at_1_own_view"`
	// With eval.samples: sampled pass@1 and maj@k on the original wording.
	SampledPassAt1 float64            `json:"sampled_pass_at_1,omitempty"`
	MajAtK         float64            `json:"maj_at_k,omitempty"`
	SampledByTask  map[string]float64 `json:"sampled_by_task,omitempty"`
	// 95% bootstrap intervals over problems (original wording).
	PassAt1CI stats.Interval  `json:"pass_at_1_ci"`
	SampledCI *stats.Interval `json:"sampled_pass_at_1_ci,omitempty"`
	// For the cohort vote: the member's answers per problem (its samples,
	// or its greedy answer) and the normalised labels.
	Pool  [][]string `json:"pool"`
	Truth []string   `json:"truth"`
	// The rest of the evaluation's record, so that the report rebuilds it
	// as the local runner writes it (histories recorded before these
	// fields lack them).
	NoAnswer      float64        `json:"no_answer_rate"`
	SampleCorrect []int          `json:"sample_correct,omitempty"`
	OwnView       *record.Result `json:"own_view_result,omitempty"` // view != 0: the whole result on the member's own view
	// OwnPool is Pool on the member's own view (view != 0): its votes
	// there, for the own-view pair predictors.
	OwnPool [][]string `json:"own_pool,omitempty"`
	// Schema is the record version of the code that evaluated
	// (record.Schema); absent in outputs of older workers.
	Schema int `json:"schema,omitempty"`
	// Predict is the member on the predictor problems (round 0 with
	// eval.predictor_split), for the pair predictors there.
	Predict *PredictOutput `json:"predict,omitempty"`
}

// PredictOutput is what the pair predictors read of a member's evaluation
// on the predictor problems: its greedy correctness, its answer pool and
// the normalised labels.
type PredictOutput struct {
	Correct []bool     `json:"correct"`
	Pool    [][]string `json:"pool"`
	Truth   []string   `json:"truth"`
}

// NewEvalOutput is a member's evaluation (res on the original wording, own
// on its view) as the activity returns it, with the labels truth.
func NewEvalOutput(res, own record.Result, view int, truth []string) EvalOutput {
	o := EvalOutput{PassAt1: res.PassAt1, ByTask: res.ByTask, Correct: res.Correct, Answers: res.Answers,
		View: view, PassAt1OwnView: own.PassAt1, SampledPassAt1: res.SampledPassAt1, MajAtK: res.MajAtK,
		SampledByTask: res.SampledByTask, PassAt1CI: res.PassAt1CI, SampledCI: res.SampledCI,
		Pool: res.CohortAnswers(), Truth: truth, NoAnswer: res.NoAnswer, SampleCorrect: res.SampleCorrect, Schema: record.Schema}
	if view != 0 {
		o.OwnView = &own
		o.OwnPool = own.CohortAnswers()
	}
	return o
}

// Result is the evaluation on the original wording, as evaluate.Run gave
// it (samples: the run's eval.samples), for the run's record.
func (o EvalOutput) Result(samples int) record.Result {
	res := record.Result{N: len(o.Correct), PassAt1: o.PassAt1, NoAnswer: o.NoAnswer, ByTask: o.ByTask, Correct: o.Correct, Answers: o.Answers,
		SampledPassAt1: o.SampledPassAt1, MajAtK: o.MajAtK, SampledByTask: o.SampledByTask, SampleCorrect: o.SampleCorrect,
		PassAt1CI: o.PassAt1CI, SampledCI: o.SampledCI}
	if o.SampledCI != nil {
		res.Samples = samples
	}
	return res
}
