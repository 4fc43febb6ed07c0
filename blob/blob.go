package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/corl-project/corl/internal/atomicfile"
)

// ErrNotFound is returned (wrapped) by Get for a missing key.
var ErrNotFound = errors.New("blob not found")

// Store is an object store.
type Store interface {
	// Put stores data under key; readers see the whole object or none.
	Put(ctx context.Context, key string, data []byte) error
	// Get returns the object's bytes, or an error wrapping ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// URI names key for people (s3://bucket/prefix/key, file:///...).
	URI(key string) string
}

// Keys of a run's objects.
func RolloutKey(run string, round int, member string) string {
	return fmt.Sprintf("runs/%s/round-%05d/rollout-%s.json", run, round, member)
}

// GradeKey is the grade (advantages and diagnostics) of a round.
func GradeKey(run string, round int) string {
	return fmt.Sprintf("runs/%s/round-%05d/grade.json", run, round)
}

// JudgeKey holds peer-judge scores of member's rollout.
func JudgeKey(run string, round int, member string) string {
	return fmt.Sprintf("runs/%s/round-%05d/judge-%s.json", run, round, member)
}

// CheckKey holds a task checker's verdicts on a round's responses, named
// by the hash of the checker and its input (checker.Key), so a retried
// grade finds them instead of running the checker again.
func CheckKey(run string, round int, hash string) string {
	return fmt.Sprintf("runs/%s/round-%05d/check-%s.json", run, round, hash)
}

// RecordsKey is one of a pipeline run's record files, as a local run's
// directory holds them: spec.json, metrics.jsonl, and complete (present
// once the run completed).
func RecordsKey(run, file string) string { return fmt.Sprintf("runs/%s/records/%s", run, file) }

// CheckpointPrefix is where member's state after round lives.
func CheckpointPrefix(run string, round int, member string) string {
	return fmt.Sprintf("runs/%s/checkpoints/%s/%s", run, RoundName(round), member)
}

// RoundName names a round's checkpoints, in a store and in a local run's
// directory alike (round-00040).
func RoundName(round int) string { return fmt.Sprintf("round-%05d", round) }

func checkKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "..") || strings.Contains(key, "\\") {
		return fmt.Errorf("blob: invalid key %q", key)
	}
	return nil
}

// Local is a Store in a directory.
type Local struct{ Root string }

// TempDir is where a Local store writes objects before renaming them into
// place, under its root: what a killed writer leaves there is swept
// (SweepTemp, `corl gc`), and never mistaken for an object.
const TempDir = ".tmp"

// Put implements Store: write a temporary file under TempDir, fsync,
// rename.
func (l Local) Put(ctx context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if strings.HasPrefix(key, TempDir+"/") {
		return fmt.Errorf("blob: invalid key %q (%s/ holds temporary files)", key, TempDir)
	}
	p := filepath.Join(l.Root, filepath.FromSlash(key))
	tmp := filepath.Join(l.Root, TempDir)
	for _, d := range []string{filepath.Dir(p), tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("blob put %s: %w", key, err)
		}
	}
	return atomicfile.WriteVia(tmp, p, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// Get implements Store.
func (l Local) Get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(l.Root, filepath.FromSlash(key)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", l.URI(key), ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blob get %s: %w", key, err)
	}
	return b, nil
}

// URI implements Store.
func (l Local) URI(key string) string {
	abs, err := filepath.Abs(l.Root)
	if err != nil {
		abs = l.Root
	}
	return "file://" + path.Join(filepath.ToSlash(abs), key)
}
