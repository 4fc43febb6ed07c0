package cli

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/model/modeltest"
)

// TestModelMergeLoRA: corl model merge-lora writes a checkpoint, without
// adapters, that scores every token as the base with its adapters does,
// with the tokenizer beside it; --out on --model is refused.
func TestModelMergeLoRA(t *testing.T) {
	dir := modeltest.Base(t, model.Llama, 3)
	m, err := model.LoadHF(cpu.New(1), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AttachLoRA(model.LoRA{Rank: 2, Alpha: 8, Targets: []string{"q_proj", "o_proj", "down_proj"}}, 1); err != nil {
		t.Fatal(err)
	}
	ad, err := m.LoRAParams()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range ad { // B too: no fused gate|up half among these targets
		ad[i] = float32(r.NormFloat64() * 0.2)
	}
	if err := m.SetLoRAParams(ad); err != nil {
		t.Fatal(err)
	}
	if err := m.SaveLoRA(dir, ""); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "merged")
	if code, _, errs := run(t, "model", "merge-lora", "--model", dir, "--out", dir); code == 0 || !strings.Contains(errs, "elsewhere") {
		t.Errorf("--out on --model: exit %d, %s", code, errs)
	}
	code, stdout, errs := run(t, "model", "merge-lora", "--model", dir, "--out", out)
	if code != 0 || !strings.Contains(stdout, "merged with r 2, lora_alpha 8") {
		t.Fatalf("merge-lora: exit %d, %s %s", code, stdout, errs)
	}
	for _, f := range []string{"adapter_config.json", "adapter_model.safetensors"} {
		if _, err := os.Stat(filepath.Join(out, f)); err == nil {
			t.Errorf("the merged checkpoint holds %s", f)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "tokenizer.json")); err != nil {
		t.Errorf("no tokenizer beside the merged weights: %v", err)
	}
	merged, err := model.LoadHF(cpu.New(1), out)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int32, 24)
	for i := range ids {
		ids[i] = int32(r.IntN(m.Cfg.Vocab))
	}
	want, _, err := m.Forward(ids, ids, 2, 12, false)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := merged.Forward(ids, ids, 2, 12, false)
	if err != nil {
		t.Fatal(err)
	}
	moved := false
	base, _ := model.LoadHF(cpu.New(1), dir)
	plain, _, _ := base.Forward(ids, ids, 2, 12, false)
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-4*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("token %d: merged %v, adapted %v", i, got[i], want[i])
		}
		moved = moved || math.Abs(float64(plain[i]-want[i])) > 1e-3
	}
	if !moved {
		t.Fatal("the adapters did not change the scores: the test cannot see a merge that drops them")
	}
}
