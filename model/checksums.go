package model

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
)

// ChecksumsFile lists a saved model directory's files with their sizes and
// sha256, written last by everything corl saves (corl pretrain, every
// checkpoint). A model that loads but is not what was saved (a flipped bit
// in model.safetensors parses fine and turns 0.138 into 4.7e37) is refused
// by LoadHF, naming the file, instead of scoring 0 with exit status 0.
const ChecksumsFile = "checksums.json"

// ErrChecksum wraps a file that does not match the directory's checksums.
var ErrChecksum = errors.New("does not match its checksum")

type checksums struct {
	Files []checksum `json:"files"`
}

type checksum struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// WriteChecksums writes dir's ChecksumsFile over every regular file in it.
func WriteChecksums(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("checksums: %w", err)
	}
	var cs checksums
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == ChecksumsFile || e.Name()[0] == '.' {
			continue
		}
		sum, size, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("checksums: %w", err)
		}
		cs.Files = append(cs.Files, checksum{Name: e.Name(), Size: size, SHA256: sum})
	}
	sort.Slice(cs.Files, func(i, j int) bool { return cs.Files[i].Name < cs.Files[j].Name })
	b, err := json.MarshalIndent(cs, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, ChecksumsFile), func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err })
}

// VerifyChecksums checks every file dir's ChecksumsFile names. A directory
// without one passes (a model from elsewhere); see LoadHF for what is
// checked then.
func VerifyChecksums(dir string) error {
	p := filepath.Join(dir, ChecksumsFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var cs checksums
	if err := json.Unmarshal(b, &cs); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	for _, c := range cs.Files {
		if filepath.Base(c.Name) != c.Name {
			return fmt.Errorf("%s: %q is not a file name in the directory", p, c.Name)
		}
		f := filepath.Join(dir, c.Name)
		sum, size, err := fileSHA256(f)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: missing, but %s lists it", f, ChecksumsFile)
		}
		if err != nil {
			return err
		}
		if size != c.Size || sum != c.SHA256 {
			return fmt.Errorf("%s %w in %s (%d bytes, sha256 %.12s; saved as %d bytes, %.12s): the file changed after it was saved; if on purpose, delete %s",
				f, ErrChecksum, ChecksumsFile, size, sum, c.Size, c.SHA256, ChecksumsFile)
		}
	}
	return nil
}

func fileSHA256(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// absurd is a weight magnitude no trained transformer has (they stay
// within tens); past it a model still runs, but almost surely on
// corrupted numbers.
const absurd = 1e4

// checkWeights refuses a tensor with NaN or Inf and returns a warning for
// one with a magnitude past absurd.
func checkWeights(file, name string, data []float32) (warning string, err error) {
	worst, at := 0.0, -1
	for i, x := range data {
		v := math.Abs(float64(x))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", fmt.Errorf("%s: tensor %q holds %v at index %d: the weights are corrupt (or a run diverged)", file, name, x, i)
		}
		if v > worst {
			worst, at = v, i
		}
	}
	if worst > absurd {
		return fmt.Sprintf("%s: tensor %q holds %.3g at index %d, far beyond trained weights: the file may be corrupt", file, name, data[at], at), nil
	}
	return "", nil
}
