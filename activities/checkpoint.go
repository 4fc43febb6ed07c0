package activities

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/cohort"
	"github.com/corl-project/corl/pipeline"
)

// Checkpoint writes the member's weights, optimizer state and tokenizer at
// the round (objects first, manifest last) and returns the manifest key.
func (a *Activities) Checkpoint(ctx context.Context, ref pipeline.MemberRef) (string, error) {
	defer a.exclusive(ctx, fmt.Sprintf("round %d checkpoint %s", ref.Round, memberName(ref)))()
	h, err := a.member(ref)
	if err != nil {
		return "", err
	}
	return a.writeCheckpoint(ctx, h, h.run, ref.Round)
}

func (a *Activities) writeCheckpoint(ctx context.Context, h *held, run string, round int) (string, error) {
	tmp, err := os.MkdirTemp("", "corl-ckpt-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := cohort.SaveMember(h.member, tmp); err != nil {
		return "", err
	}
	files := map[string][]byte{}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(tmp, e.Name()))
		if err != nil {
			return "", err
		}
		files[e.Name()] = b
	}
	return blob.WriteCheckpoint(ctx, a.Store, blob.CheckpointPrefix(run, round, h.member.Name), files,
		map[string]string{"run": run, "member": h.member.Name, "round": fmt.Sprint(round)})
}

// CheckpointAll writes every member a holds at its current round: what a
// worker does on a stop notice (SIGTERM) before it exits. (A function, not a
// method: every method of Activities is registered as an activity.)
func CheckpointAll(ctx context.Context, a *Activities) []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []error
	for _, h := range a.held {
		if _, err := a.writeCheckpoint(ctx, h, h.run, h.round); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint %s/%s: %w", h.run, h.member.Name, err))
		}
	}
	return errs
}
