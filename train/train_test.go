package train

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/cohort"
	"github.com/corl-project/corl/config"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/model/modeltest"
	"github.com/corl-project/corl/record"
)

func runSpec(t *testing.T, out string, rounds int, a, b string) *config.RunSpec {
	t.Helper()
	return runSpecWith(t, out, rounds, a, b, "")
}

// runSpecWith is runSpec with more settings of member l (YAML fields,
// each with a leading comma).
func runSpecWith(t *testing.T, out string, rounds int, a, b, lMore string) *config.RunSpec {
	t.Helper()
	file := filepath.Join(t.TempDir(), "run.yaml")
	body := fmt.Sprintf(`name: t
rounds: %d
prompts_per_round: 3
data: {tasks: [mod], rl_size: 12}
generation: {num_generations: 3, max_completion_length: 12}
eval: {size: 4}
checkpoint: {every: 1}
optim: {learning_rate: 0.01}
grpo: {beta: 0.05}
reward: {mode: entropy}
output_dir: %q
members:
  - {name: g, base: %q}
  - {name: l, base: %q, view: 1%s}
`, rounds, out, a, b, lMore)
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := config.Load(file, func(string) string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func weights(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLocalRunAndExactResume: a 3-round run equals the same run stopped after
// 2 rounds and resumed (on another thread count), bitwise, and writes a
// metrics line per round.
func TestLocalRunAndExactResume(t *testing.T) {
	a, b := modeltest.Base(t, model.GPT2, 1), modeltest.Base(t, model.Llama, 2)
	var log bytes.Buffer
	full := t.TempDir()
	if err := Local(context.Background(), cpu.New(2), runSpec(t, full, 3, a, b), Options{}, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	f, _ := os.Open(filepath.Join(full, "t", "metrics.jsonl"))
	lines, checkpoints := 0, 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		lines++
		if strings.HasPrefix(sc.Text(), `{"checkpoint":`) {
			checkpoints++
		}
	}
	f.Close()
	// initial evaluation + 3 rounds, and a line with each checkpoint's time
	// (the spec checkpoints every round)
	if lines != 7 || checkpoints != 3 {
		t.Fatalf("metrics.jsonl has %d lines (%d checkpoint lines), want 7 (3)", lines, checkpoints)
	}
	part := t.TempDir()
	// Interrupted after 2 rounds, resumed on another thread count.
	if err := Local(context.Background(), cpu.New(1), runSpec(t, part, 3, a, b), Options{StopAfter: 2}, &log); err != nil {
		t.Fatal(err)
	}
	if err := Local(context.Background(), cpu.New(3), runSpec(t, part, 3, a, b), Options{Resume: true}, &log); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"g", "l"} {
		x := weights(t, filepath.Join(full, "t", "checkpoints", blob.RoundName(3), name))
		y := weights(t, filepath.Join(part, "t", "checkpoints", blob.RoundName(3), name))
		if !bytes.Equal(x, y) {
			t.Fatalf("member %s: resumed run's weights differ from the uninterrupted run's", name)
		}
		if bytes.Equal(x, weights(t, map[string]string{"g": a, "l": b}[name])) {
			t.Fatalf("member %s: weights never changed", name)
		}
	}
}

// TestLocalRunWithLoRA: a member with lora trains its adapters alone:
// each checkpoint holds its weights as the base's, byte for byte, beside
// adapters in PEFT's layout that moved; the run stopped after 2 rounds
// and resumed ends with the same adapters, bit for bit.
func TestLocalRunWithLoRA(t *testing.T) {
	a, b := modeltest.Base(t, model.GPT2, 1), modeltest.Base(t, model.Llama, 2)
	var log bytes.Buffer
	lora := ", lora: {r: 4, lora_alpha: 8, target_modules: [q_proj, v_proj, down_proj]}"
	full, part := t.TempDir(), t.TempDir()
	if err := Local(context.Background(), cpu.New(2), runSpecWith(t, full, 3, a, b, lora), Options{}, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if err := Local(context.Background(), cpu.New(1), runSpecWith(t, part, 3, a, b, lora), Options{StopAfter: 2}, &log); err != nil {
		t.Fatal(err)
	}
	if err := Local(context.Background(), cpu.New(3), runSpecWith(t, part, 3, a, b, lora), Options{Resume: true}, &log); err != nil {
		t.Fatal(err)
	}
	adapters := func(run string, round int) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(run, "t", "checkpoints", blob.RoundName(round), "l", "adapter_model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	l3 := filepath.Join(full, "t", "checkpoints", blob.RoundName(3), "l")
	if !bytes.Equal(weights(t, l3), weights(t, b)) {
		t.Error("member l's weights changed under LoRA")
	}
	if bytes.Equal(adapters(full, 1), adapters(full, 3)) {
		t.Error("member l's adapters did not move from round 1 to 3")
	}
	if !bytes.Equal(adapters(full, 3), adapters(part, 3)) {
		t.Error("the resumed run's adapters differ from the uninterrupted run's")
	}
	if bytes.Equal(weights(t, filepath.Join(full, "t", "checkpoints", blob.RoundName(3), "g")), weights(t, a)) {
		t.Error("member g (no lora) did not train")
	}
	cfg, err := model.ReadLoRAConfig(l3)
	if err != nil || cfg.Rank != 4 || cfg.Alpha != 8 || len(cfg.Targets) != 3 {
		t.Errorf("adapter_config.json: %+v, %v", cfg, err)
	}
}

// TestMaxFLOPsEndsALocalRun: with max_flops between the FLOPs of rounds
// 1-2 and 1-3 a 5-round run ends after round 3, checkpointed and
// evaluated there, and resuming it runs nothing more.
func TestMaxFLOPsEndsALocalRun(t *testing.T) {
	a, b := modeltest.Base(t, model.GPT2, 1), modeltest.Base(t, model.Llama, 2)
	var log bytes.Buffer
	full := t.TempDir()
	if err := Local(context.Background(), cpu.New(2), runSpec(t, full, 3, a, b), Options{}, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	r, err := readRounds(filepath.Join(full, "t", "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var upTo []float64 // FLOPs spent after each round
	total := 0.0
	for _, m := range r {
		for _, md := range m.Models {
			total += md.FLOPs()
		}
		upTo = append(upTo, total)
	}
	budget := t.TempDir()
	s := runSpec(t, budget, 5, a, b)
	s.MaxFLOPs = (upTo[1] + upTo[2]) / 2
	for range 2 { // the second time resumes from the final checkpoint
		if err := Local(context.Background(), cpu.New(2), s, Options{Resume: exists(filepath.Join(budget, "t", "state.json"))}, &log); err != nil {
			t.Fatal(err)
		}
		got, err := readRounds(filepath.Join(budget, "t", "metrics.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("%d rounds under a budget spent in round 3", len(got))
		}
	}
	if !exists(filepath.Join(budget, "t", "checkpoints", blob.RoundName(3), "g", "model.safetensors")) {
		t.Error("no checkpoint after the round that spent the budget")
	}
	if !strings.Contains(log.String(), "spent max_flops") && !strings.Contains(log.String(), "rounds max_flops") {
		t.Errorf("the log does not say why the run ended:\n%s", log.String())
	}
	// The budget paid for about three rounds at the first one's cost, so
	// the learning rate anneals over those, not over the spec's five: the
	// last round's is the schedule's floor.
	if !strings.Contains(log.String(), "so the budget pays for 3 of the 5 rounds") {
		t.Errorf("no plan in the log:\n%s", log.String())
	}
	got, _ := readRounds(filepath.Join(budget, "t", "metrics.jsonl"))
	last, floor := got[len(got)-1].Models[0].LR, s.Optim.LearningRate*s.Optim.MinLRRatio
	if math.Abs(last-floor) > 1e-12 {
		t.Errorf("last round's learning rate %g, want the annealed floor %g", last, floor)
	}
}

// readRounds reads a metrics.jsonl's round records.
func readRounds(path string) ([]record.Round, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []record.Round
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var rec struct {
			Round *record.Round `json:"round"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, err
		}
		if rec.Round != nil {
			out = append(out, *rec.Round)
		}
	}
	return out, nil
}

// TestCheckMembersRefusesTooLongCompletions: a max_completion_length that
// does not fit after a member's longest prompt is refused before any model
// loads or any metric is written, naming the key, the member and its
// config.json; one that fits passes.
func TestCheckMembersRefusesTooLongCompletions(t *testing.T) {
	a, b := modeltest.Base(t, model.GPT2, 1), modeltest.Base(t, model.Llama, 2)
	out := t.TempDir()
	s := runSpec(t, out, 1, a, b)
	data, err := cohort.LoadData(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := cohort.CheckMembers(s, data); err != nil {
		t.Fatalf("a spec that fits: %v", err)
	}
	s.Generation.MaxCompletion = 250 // the test bases have 256 positions
	err = Local(context.Background(), cpu.New(1), s, Options{}, io.Discard)
	want := []string{"generation.max_completion_length: 250 tokens after member g's longest prompt", "the model has 256",
		filepath.Join(a, "config.json"), "shorten it to at most"}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Fatalf("Local with too long completions: %v\nwant it to say %q", err, w)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "t", "metrics.jsonl")); err == nil {
		t.Fatal("the refused run wrote metrics.jsonl")
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
