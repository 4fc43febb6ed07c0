package modeltest

import (
	"path/filepath"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/tokenizer"
)

// Base writes a one-layer, width-32 byte-level model of family (random
// weights from seed) with its tokenizer into a new temporary directory.
func Base(t testing.TB, family string, seed uint64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), family)
	tok := tokenizer.NewBytes()
	m, err := model.New(cpu.New(1), model.Config{Family: family, Layers: 1, Dim: 32, Heads: 2, Vocab: tok.VocabSize(), MaxSeq: 256}, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SaveHF(dir); err != nil {
		t.Fatal(err)
	}
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}
