package report

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/corl-project/corl/internal/atomicfile"
	"github.com/corl-project/corl/spec"
)

// RecordsName is the file in a results directory that holds its runs'
// records, so that `corl report DIR` redraws every number and plot
// offline from what was committed.
const RecordsName = "runs.jsonl.gz"

// SaveRecords writes runs as gzipped JSON lines, one run each (its spec,
// every round's metrics and every evaluation with its per-problem
// outcomes): what the report reads, and nothing it recomputes from.
func SaveRecords(path string, runs []*Run) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		zw := gzip.NewWriter(w)
		enc := json.NewEncoder(zw)
		for _, r := range runs {
			rec := *r
			rec.Dir = "" // a path of the machine that drew it
			if err := enc.Encode(rec); err != nil {
				return err
			}
		}
		return zw.Close()
	})
}

// LoadRecords reads what SaveRecords wrote.
func LoadRecords(path string) ([]*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", path, err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	var runs []*Run
	for line := 1; sc.Scan(); line++ {
		var r Run
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("report: %s: line %d: %w", path, line, err)
		}
		if len(r.Evals) == 0 {
			return nil, fmt.Errorf("report: %s: line %d: run %s has no evaluations", path, line, r.Spec.Name)
		}
		for i := range r.Evals {
			r.Evals[i].Upgrade()
		}
		runs = append(runs, &r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("report: %s: %w", path, err)
	}
	return runs, nil
}

// LoadDir reads a directory argument of `corl report`: a results
// directory (with RecordsName) or one run's directory (spec.json and
// metrics.jsonl).
func LoadDir(dir string) ([]*Run, error) {
	if p := filepath.Join(dir, RecordsName); fileExists(p) {
		return LoadRecords(p)
	}
	r, err := Load(dir)
	if err != nil {
		return nil, fmt.Errorf("%w; or a results directory with %s (corl report --records)", err, RecordsName)
	}
	return []*Run{r}, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// SpecKey is a run's identity: its spec as JSON (map keys sorted). Runs
// are deterministic in their spec, so two with one key are the same run.
func SpecKey(s spec.RunSpec) (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}

// Distinct drops every run whose spec equals an earlier one's: the same
// run read twice (a results directory's records and the sweep that goes
// on from them). Nothing is lost (SpecKey).
func Distinct(runs []*Run) (kept []*Run, dropped int) {
	seen := map[string]bool{}
	for _, r := range runs {
		k, err := SpecKey(r.Spec)
		if err == nil && seen[k] {
			dropped++
			continue
		}
		seen[k] = true
		kept = append(kept, r)
	}
	return kept, dropped
}
