package model

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
)

// savedModel saves a small random model and its checksums into a new
// directory and returns the directory and the byte offset of the first
// weight in model.safetensors.
func savedModel(t *testing.T) (string, int) {
	t.Helper()
	dir := t.TempDir()
	m, err := New(cpu.New(1), Config{Family: GPT2, Layers: 1, Dim: 32, Heads: 2, Vocab: 64, MaxSeq: 32}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SaveHF(dir); err != nil {
		t.Fatal(err)
	}
	if err := WriteChecksums(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, 8 + int(binary.LittleEndian.Uint64(b))
}

// setWeight rewrites the float32 at byte offset off of model.safetensors.
func setWeight(t *testing.T, dir string, off int, f func(float32) float32) (before, after float32) {
	t.Helper()
	p := filepath.Join(dir, "model.safetensors")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	before = math.Float32frombits(binary.LittleEndian.Uint32(b[off:]))
	after = f(before)
	binary.LittleEndian.PutUint32(b[off:], math.Float32bits(after))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return before, after
}

// TestCorruptWeightsAreRefused: one exponent bit flipped in
// model.safetensors still parses, and runs, as a far larger weight. With
// the checksums corl writes, loading refuses the file by name; without
// them, the absurd magnitude is a warning, and a NaN or an Inf is refused
// naming file and tensor.
func TestCorruptWeightsAreRefused(t *testing.T) {
	dir, first := savedModel(t)
	if _, err := LoadHF(cpu.New(1), dir); err != nil {
		t.Fatalf("a saved model with its checksums: %v", err)
	}
	off := first
	for ; ; off += 4 { // a weight of magnitude below 2, whose top exponent bit is clear
		b, _ := os.ReadFile(filepath.Join(dir, "model.safetensors"))
		if v := math.Abs(float64(math.Float32frombits(binary.LittleEndian.Uint32(b[off:])))); v > 1e-3 && v < 2 {
			break
		}
	}
	before, after := setWeight(t, dir, off, func(x float32) float32 { return math.Float32frombits(math.Float32bits(x) ^ 1<<30) })
	t.Logf("one bit flipped: %g became %g", before, after)
	_, err := LoadHF(cpu.New(1), dir)
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), filepath.Join(dir, "model.safetensors")) {
		t.Fatalf("flipped bit with checksums: err = %v, want a checksum mismatch naming model.safetensors", err)
	}
	if err := os.Remove(filepath.Join(dir, ChecksumsFile)); err != nil {
		t.Fatal(err)
	}
	m, err := LoadHF(cpu.New(1), dir)
	if err != nil {
		t.Fatalf("flipped bit without checksums: %v (want a warning)", err)
	}
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "far beyond trained weights") || !strings.Contains(m.Warnings[0], "model.safetensors") {
		t.Errorf("warnings %q", m.Warnings)
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
		setWeight(t, dir, off, func(float32) float32 { return bad })
		if _, err := LoadHF(cpu.New(1), dir); err == nil || !strings.Contains(err.Error(), "model.safetensors: tensor") {
			t.Errorf("a weight of %v: err = %v, want a refusal naming file and tensor", bad, err)
		}
	}
	// A file the checksums list that is gone.
	dir2, _ := savedModel(t)
	os.Remove(filepath.Join(dir2, "config.json"))
	if _, err := LoadHF(cpu.New(1), dir2); err == nil || !strings.Contains(err.Error(), "config.json: missing") {
		t.Errorf("a listed file removed: %v", err)
	}
}

// TestSetParamsRestoresCopiedWeights: weights copied before training and
// set back afterwards are bitwise the copied ones (corl pretrain saves its
// best evaluated step this way).
func TestSetParamsRestoresCopiedWeights(t *testing.T) {
	dir, _ := savedModel(t)
	m, err := LoadHF(cpu.New(1), dir)
	if err != nil {
		t.Fatal(err)
	}
	before, err := m.CopyParams()
	if err != nil {
		t.Fatal(err)
	}
	b := Batch{B: 1, T: 4, Inputs: []int32{1, 2, 3, 4}, Targets: []int32{2, 3, 4, 5}}
	if _, err := m.TrainStep(b, DefaultOptim(1e-2)); err != nil {
		t.Fatal(err)
	}
	trained, _ := m.CopyParams()
	if slices.Equal(trained, before) {
		t.Fatal("the training step changed nothing: the test cannot tell")
	}
	if err := m.SetParams(before); err != nil {
		t.Fatal(err)
	}
	after, _ := m.CopyParams()
	if !slices.Equal(after, before) {
		t.Error("SetParams did not restore the copied weights")
	}
	if err := m.SetParams(before[:10]); err == nil {
		t.Error("a short copy was accepted")
	}
}
