package spec

// RunSpec is everything a cohort run needs. It travels as plain JSON (the
// Temporal workflow's input), so it holds no paths that only one machine
// understands except the members' base checkpoints and the output location.
type RunSpec struct {
	Name string `json:"name"`
	// Method is the label the report gives this run's method (its rows,
	// plots and groups); a sweep's method axis sets it from the value's
	// name. Empty: the report names the method from the reward and the
	// members. It changes nothing the run computes.
	Method          string     `json:"method,omitempty"`
	Seed            uint64     `json:"seed"`
	Rounds          int        `json:"rounds"`
	PromptsPerRound int        `json:"prompts_per_round"`
	Data            Data       `json:"data"`
	Reward          Reward     `json:"reward"`
	Generation      Generation `json:"generation"`
	GRPO            GRPO       `json:"grpo"`
	Optim           Optim      `json:"optim"`
	MicroBatchSize  int        `json:"micro_batch_size"`
	// Recompute keeps one layer's activations in each training pass and
	// runs each layer's forward again in the backward (model.Model's
	// Recompute): the same gradients, bit for bit, in less memory.
	Recompute bool `json:"recompute,omitempty"`
	// LogitRows > 0 computes a training pass's logits that many tokens at
	// a time (model.Model's LogitRows): a block's logits held, not every
	// token's.
	LogitRows int `json:"logit_rows,omitempty"`
	// UpdatePrecision is what the update's matmuls compute in: "" or
	// "fp32", or "bf16" (mixed precision, model.Model's BF16Matmuls:
	// bfloat16 operands on a GPU's tensor cores, float32 sums, float32
	// master weights, gradients and AdamW).
	UpdatePrecision string     `json:"update_precision,omitempty"`
	Members         []Member   `json:"members"`
	Eval            Eval       `json:"eval"`
	Checkpoint      Checkpoint `json:"checkpoint"`
	OutputDir       string     `json:"output_dir"`
	// MaxFLOPs > 0 ends the run after the round in which its FLOPs
	// (generation, scoring and updates, summed over members) reach it;
	// rounds is then an upper bound that still sets the learning-rate
	// schedule. A compute-matched baseline: one self-rewarding model given
	// a whole cohort's FLOPs.
	MaxFLOPs float64 `json:"max_flops,omitempty"`
}

// Data says where prompts come from: built-in tasks (split by data_seed, the
// same seed the base models were pretrained with) or a user file.
type Data struct {
	Tasks       []string `json:"tasks"`
	DataSeed    uint64   `json:"data_seed"`
	RLSize      int      `json:"rl_size"` // RL prompts per task
	MaxLevel    int      `json:"max_level"`
	File        string   `json:"file,omitempty"` // JSONL/Parquet prompts instead of tasks
	PromptField string   `json:"prompt_field,omitempty"`
	AnswerField string   `json:"answer_field,omitempty"`
	// LastNumber lets a file's responses without a marked answer ("The
	// answer is X", \boxed{X}, "#### X") be graded by their last number.
	LastNumber bool `json:"last_number_fallback,omitempty"`
	// AnswerType is how a file's answers are read and compared: number,
	// text, choice or expression (empty: inferred from the file's labels
	// when the spec is loaded; built-in tasks are numbers).
	AnswerType string `json:"answer_type,omitempty"`
	// FileSplit says which of a file's rows RL uses: "hash" (default) the
	// rl set of datasets.FileSet (rows a base pretrained on the file with
	// the same data_seed never saw; evaluation scores its test or
	// validation rows); "none" every row, with no evaluation.
	FileSplit string `json:"file_split,omitempty"`
	// Checker is the task's own answer checker, a program spoken to over
	// line-delimited JSON (package checker), that keys answers for votes
	// and, for the ground-truth reward and evaluation, says which are
	// right, instead of answer_type's rules. It runs, sandboxed, where
	// rounds are graded (the CPU pool) and evaluated.
	Checker Checker `json:"checker,omitzero"`
}

// Checker names a task's answer checker and its limits.
type Checker struct {
	// Command is the program and its arguments (a list, or one string
	// split at spaces); it runs in an empty directory, so a file it reads
	// is named by an absolute path (a relative one that exists next to
	// the spec file is made absolute when the spec is loaded).
	Command []string `json:"command,omitempty"`
	// TimeoutSeconds bounds one batch (a round's responses; 0: 60).
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// MemoryMB bounds its address space (0: 1024); Processes the processes
	// it may run at once (0: 32).
	MemoryMB  int `json:"memory_mb,omitempty"`
	Processes int `json:"processes,omitempty"`
}

// Names of the reward modes, as written in run specs.
const (
	PeerRing      = "peer-ring"
	PeerMajority  = "peer-majority"
	PeerJudge     = "peer-judge"
	GroundTruthRL = "ground-truth"
	SelfVote      = "self-vote"
	SelfCertainty = "self-certainty"
	Entropy       = "entropy"
)

// RewardModes lists every reward mode.
var RewardModes = []string{PeerRing, PeerMajority, PeerJudge, GroundTruthRL, SelfVote, SelfCertainty, Entropy}

// Reward selects the strategy.
type Reward struct {
	Mode      string  `json:"mode"`
	Threshold float64 `json:"self_consistency_threshold"`
}

// Generation is the sampling setup (TRL names).
type Generation struct {
	NumGenerations int     `json:"num_generations"`
	Temperature    float32 `json:"temperature"`
	TopK           int     `json:"top_k"`
	TopP           float32 `json:"top_p"`
	MaxCompletion  int     `json:"max_completion_length"`
	// KVCache is how rollouts' key/value cache stores keys and values:
	// "f32" (the default) or "f16", IEEE binary16, half the bytes that
	// decoding reads, with each key and value rounded (CPU and CUDA backends).
	// Evaluation always decodes with float32.
	KVCache string `json:"kv_cache,omitempty"`
	// Weights is what rollouts' matmuls read the weights as: "f32" (the
	// default); "bf16", each weight rounded to bfloat16 while the round
	// generates, half the bytes that decoding a few sequences is bound by;
	// or "bf16-act", the matmuls' inputs rounded to bfloat16 too (float32
	// sums: tensor cores through cuBLAS on a GPU). The update, its
	// log-probabilities and evaluation always use float32.
	Weights string `json:"weights,omitempty"`
}

// Optim is AdamW with warmup and cosine decay (TRL/transformers names).
type Optim struct {
	LearningRate float64 `json:"learning_rate"`
	WarmupSteps  int     `json:"warmup_steps"`
	// WarmupRatio is the share of the run's optimizer steps spent warming
	// up when WarmupSteps is 0 (TRL's warmup_ratio; 0 for none).
	WarmupRatio float64 `json:"warmup_ratio"`
	MinLRRatio  float64 `json:"min_lr_ratio"`
	AdamBeta1   float32 `json:"adam_beta1"`
	AdamBeta2   float32 `json:"adam_beta2"`
	AdamEpsilon float32 `json:"adam_epsilon"`
	WeightDecay float32 `json:"weight_decay"`
	MaxGradNorm float32 `json:"max_grad_norm"`
}

// Member is one model of the cohort.
type Member struct {
	Name string `json:"name"`
	Base string `json:"base"` // checkpoint directory (config.json, model.safetensors, tokenizer.json)
	View int    `json:"view"` // 0: original prompts, 1: rephrased (the "different data" axis)
	// Frozen members vote and label their peers but are never updated:
	// the frozen-peer control, which tells learning from a fixed labeller
	// apart from co-training.
	Frozen bool `json:"frozen,omitempty"`
	// LoRA trains low-rank adapters of the member with its weights
	// frozen (PEFT's LoraConfig fields), for a member too large for a full
	// fine-tune: gradients and AdamW state for the adapters alone, saved
	// in PEFT's layout beside the weights in each checkpoint. Llama-family
	// members only. Nil: a full fine-tune.
	LoRA *LoRA `json:"lora,omitempty"`
}

// LoRA is a member's adapter configuration, named as in PEFT's
// adapter_config.json.
type LoRA struct {
	R             int      `json:"r"`
	Alpha         float64  `json:"lora_alpha"`
	TargetModules []string `json:"target_modules,omitempty"` // empty: every projection
}

// Eval runs held-out evaluation every Every rounds (0: at the end only).
type Eval struct {
	Every int `json:"every"`
	Size  int `json:"size"` // problems per task
	// Samples > 0 adds that many sampled completions per problem: sampled
	// pass@1 and maj@k, at Temperature (0: generation.temperature).
	Samples     int     `json:"samples"`
	Temperature float32 `json:"temperature"`
	// Split is the held-out set: test (reported numbers) or validation
	// (choosing hyperparameters).
	Split string `json:"split"`
	// PredictorSplit "validation" also measures the cohort's round-0 pair
	// predictors (rescue rates, shared errors, vote accuracy, kappa) on
	// the validation split, so that an analysis of gains on test does not
	// choose its predictor on the test problems ("": on the evaluation
	// split only).
	PredictorSplit string `json:"predictor_split,omitempty"`
}

// Checkpoint saves the cohort every Every rounds (0: at the end only).
type Checkpoint struct {
	Every int `json:"every"`
}

// GRPO holds the policy-update settings (TRL's GRPOConfig names).
type GRPO struct {
	ScaleRewards  string  `json:"scale_rewards"`  // group | batch | none
	LossType      string  `json:"loss_type"`      // token-mean | seq-mean-token-mean | seq-mean-token-sum-norm
	Epsilon       float64 `json:"epsilon"`        // lower clip
	EpsilonHigh   float64 `json:"epsilon_high"`   // upper clip (clip-higher); 0 means epsilon
	Beta          float64 `json:"beta"`           // KL weight (k3); 0: no reference model
	NumIterations int     `json:"num_iterations"` // policy epochs per round
	// StepsPerGeneration splits a round's prompts into this many
	// mini-batches, one optimizer step each (TRL's steps_per_generation).
	StepsPerGeneration int `json:"steps_per_generation,omitempty"`
}

// StepsPerRound is the optimizer steps one round takes: epochs x
// mini-batches.
func (g GRPO) StepsPerRound() int { return max(g.NumIterations, 1) * max(g.StepsPerGeneration, 1) }

// MemberNames lists the members in cohort order.
func (s *RunSpec) MemberNames() []string {
	out := make([]string, len(s.Members))
	for i, m := range s.Members {
		out[i] = m.Name
	}
	return out
}
