package report

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/rl"
	"github.com/corl-project/corl/spec"
)

// Run is one finished (or running) local run read back from its directory:
// spec.json and metrics.jsonl as `corl train --local` writes them.
type Run struct {
	Dir    string
	Spec   spec.RunSpec
	Rounds []record.Round
	Evals  []record.Eval
	// Families names the model family of bases that are not directories
	// here (bases uploaded to the blob store, "blob:..."), read by
	// ReadFamilies; Method tells the cohort's make-up by them.
	Families map[string]string
	// Complete: the run ended having done what its spec asks (a workflow
	// that completed); a run read while in progress, or cancelled, is not.
	// Only complete runs count as recorded (corl sweep --recorded).
	Complete bool `json:",omitempty"`
}

// Load reads a run directory.
func Load(dir string) (*Run, error) {
	sj, err := os.ReadFile(filepath.Join(dir, "spec.json"))
	if err != nil {
		return nil, fmt.Errorf("report: %w (a run directory has spec.json and metrics.jsonl)", err)
	}
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	defer f.Close()
	r, err := parseRun(dir, filepath.Join(dir, "spec.json"), sj, filepath.Join(dir, "metrics.jsonl"), f)
	if err != nil {
		return nil, err
	}
	if len(r.Evals) == 0 {
		return nil, fmt.Errorf("report: %s has no evaluation yet", dir)
	}
	return r, nil
}

// parseRun reads a run's spec.json and metrics.jsonl (named as given in
// errors, with the line).
func parseRun(dir, specName string, specJSON []byte, metricsName string, metrics io.Reader) (*Run, error) {
	r := &Run{Dir: dir}
	if err := json.Unmarshal(specJSON, &r.Spec); err != nil {
		return nil, fmt.Errorf("report: %s: %w", specName, err)
	}
	sc := bufio.NewScanner(metrics)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var rec struct {
			Round *record.Round `json:"round"`
			Eval  *record.Eval  `json:"eval"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("report: %s line %d: %w", metricsName, line, err)
		}
		if rec.Round != nil {
			r.Rounds = append(r.Rounds, *rec.Round)
		}
		if rec.Eval != nil {
			rec.Eval.Upgrade()
			r.Evals = append(r.Evals, *rec.Eval)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("report: %s: %w", metricsName, err)
	}
	return r, nil
}

// FromStore reads a pipeline run's records from the store, where its
// workflow writes them (activities.WriteRecords, blob.RecordsKey) at each
// evaluation and when it ends. A run that wrote none (started before
// workflows wrote records) is an error wrapping blob.ErrNotFound.
func FromStore(ctx context.Context, store blob.Store, id string) (*Run, error) {
	key := func(f string) string { return blob.RecordsKey(id, f) }
	sj, err := store.Get(ctx, key("spec.json"))
	if err != nil {
		return nil, fmt.Errorf("report: run %s: %w", id, err)
	}
	mj, err := store.Get(ctx, key("metrics.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("report: run %s: %w", id, err)
	}
	r, err := parseRun("store:"+id, store.URI(key("spec.json")), sj, store.URI(key("metrics.jsonl")), bytes.NewReader(mj))
	if err != nil {
		return nil, err
	}
	switch _, err := store.Get(ctx, key("complete")); {
	case err == nil:
		r.Complete = true
	case !errors.Is(err, blob.ErrNotFound):
		return nil, fmt.Errorf("report: run %s: %w", id, err)
	}
	return r, nil
}

// Method names the run's row in the table: the baselines by their papers'
// names, Co-RL by its cohort's make-up.
func (r *Run) Method() string {
	s := r.Spec
	if s.Method != "" {
		return s.Method
	}
	switch s.Reward.Mode {
	case rl.GroundTruthRL:
		return "Ground-truth"
	case rl.SelfVote:
		if len(s.Members) == 1 && r.computeMatched() {
			return "Self-vote, compute-matched"
		}
		return "Self-vote (TTRL)"
	case rl.Entropy:
		return "Entropy (RENT)"
	case rl.SelfCertainty:
		return "Self-certainty (Intuitor)"
	}
	families, views := map[string]bool{}, map[int]bool{}
	for _, m := range s.Members {
		families[cmp.Or(r.Families[m.Base], baseFamily(m.Base))] = true
		views[m.View] = true
	}
	label := "Co-RL same family"
	if len(families) > 1 {
		label = "Co-RL different family"
	}
	if len(views) > 1 {
		label += " + rephrased"
	}
	return label + " (" + s.Reward.Mode + ")"
}

// computeMatched marks a single-model run given a FLOP budget (max_flops)
// or whose name says it was sized to a cohort's compute.
func (r *Run) computeMatched() bool {
	return r.Spec.MaxFLOPs > 0 || strings.Contains(r.Spec.Name, "compute-matched")
}

// ReadFamilies fills each run's Families for its members' uploaded bases
// from their config.json in the store. A base it cannot read keeps its
// name as its family (as an unreadable directory does).
func ReadFamilies(ctx context.Context, store blob.Store, runs []*Run) {
	for _, r := range runs {
		for _, m := range r.Spec.Members {
			ref, ok := strings.CutPrefix(m.Base, blob.BlobRef)
			if !ok {
				continue
			}
			b, err := store.Get(ctx, path.Join(path.Dir(ref), "config.json"))
			if err != nil {
				continue
			}
			if family := modelType(b); family != "" {
				if r.Families == nil {
					r.Families = map[string]string{}
				}
				r.Families[m.Base] = family
			}
		}
	}
}

// baseFamily reads model_type from a base's config.json (the directory's
// name when unreadable).
func baseFamily(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return dir
	}
	return cmp.Or(modelType(b), dir)
}

// modelType is a config.json's model_type ("" when it has none).
func modelType(config []byte) string {
	var c struct {
		ModelType string `json:"model_type"`
	}
	json.Unmarshal(config, &c)
	return c.ModelType
}

// FLOPs is the run's generation, scoring and update FLOPs, summed over members and
// rounds, after each round.
func (r *Run) FLOPs() []float64 {
	out := make([]float64, len(r.Rounds))
	total := 0.0
	for i, m := range r.Rounds {
		for _, md := range m.Models {
			total += md.FLOPs()
		}
		out[i] = total
	}
	return out
}

// Seconds is the run's compute time: every member's generation and update
// seconds, summed over rounds (grading, checkpoints and evaluations left
// out). The committed studies' workers ran one thread each, so these are
// CPU seconds.
func (r *Run) Seconds() float64 {
	t := 0.0
	for _, m := range r.Rounds {
		for _, md := range m.Models {
			t += md.GenSeconds + md.UpdateSeconds
		}
	}
	return t
}

// groupKey is the run's spec without what varies between seeds of one
// method: runs with one key are one row.
func groupKey(r *Run) string {
	b, _ := json.Marshal(methodSpec(r))
	return string(b)
}

// methodSpec is the run's spec without what does not make its method: the
// seed, the run's name and its output directory.
func methodSpec(r *Run) spec.RunSpec {
	s := r.Spec
	s.Seed, s.Name, s.OutputDir = 0, "", ""
	return s
}

// baseDirs are the distinct base models of the run's members named.
func baseDirs(r *Run, members []string) []string {
	var out []string
	for _, m := range r.Spec.Members {
		if slices.Contains(members, m.Name) && !slices.Contains(out, m.Base) {
			out = append(out, m.Base)
		}
	}
	slices.Sort(out)
	return out
}

func memberNames(e record.Eval) []string {
	names := make([]string, 0, len(e.Members))
	for n := range e.Members {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
