// Package activities holds corl's Temporal activities: the round's stages
// (acquire a member, generate, judge, grade, update, checkpoint, evaluate,
// replay) as methods on a struct that carries their dependencies: the blob
// store, the compute backend, this worker's own task queue and the models it
// holds. Everything large moves through the blob store under keys derived
// from (run, round, member), so a retried activity overwrites its own output
// and an update is never applied twice. What they take and return is
// package pipeline's.
package activities

import (
	"encoding/json"
	"fmt"

	"github.com/corl-project/corl/rl"
)

// rolloutBlob is what Generate stores.
type rolloutBlob struct {
	Member  string     `json:"member"`
	Round   int        `json:"round"`
	Rollout rl.Rollout `json:"rollout"`
	Groups  []rl.Group `json:"groups"` // answers and intrinsic signals for grading
}

// gradeBlob is what Grade stores.
type gradeBlob struct {
	Round      int            `json:"round"`
	Advantages [][][]float64  `json:"advantages"` // [member][prompt][sample]
	Diag       rl.Diagnostics `json:"diagnostics"`
}

// judgeBlob is what Judge stores: the judge's scores of the target's
// samples ([prompt][sample]) and what scoring them cost.
type judgeBlob struct {
	Scores [][]float64 `json:"scores"`
	FLOPs  float64     `json:"flops"`
}

// readJudgeBlob reads a judge blob, or the bare scores that earlier
// versions stored (their cost unknown: 0).
func readJudgeBlob(b []byte) (judgeBlob, error) {
	var jb judgeBlob
	if err := json.Unmarshal(b, &jb); err == nil && jb.Scores != nil {
		return jb, nil
	}
	var scores [][]float64
	if err := json.Unmarshal(b, &scores); err != nil {
		return jb, fmt.Errorf("judge scores: %w", err)
	}
	return judgeBlob{Scores: scores}, nil
}
