package activities

import (
	"encoding/json"
	"fmt"

	"github.com/corl-project/corl/record"
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
	Round      int                `json:"round"`
	Advantages [][][]float64      `json:"advantages"` // [member][prompt][sample]
	Diag       record.Diagnostics `json:"diagnostics"`
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
