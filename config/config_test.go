package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/viper"

	"github.com/corl-project/corl/datasets"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/rl"
	"github.com/corl-project/corl/spec"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const good = `
name: test
rounds: 3
data:
  tasks: [arith, linear]
reward:
  mode: peer-majority
generation:
  num_generations: 4
grpo:
  beta: 0.04
members:
  - {name: a, base: bases/a}
  - {name: b, base: bases/b, view: 1}
`

func noEnv(string) string { return "" }

func TestLoadMergesFileEnvAndOverrides(t *testing.T) {
	env := map[string]string{"CORL_GRPO_EPSILON": "0.3", "CORL_ROUNDS": "7"}
	s, err := Load(write(t, good), func(k string) string { return env[k] }, map[string]any{"rounds": 9})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "test" || s.Reward.Mode != "peer-majority" || s.Generation.NumGenerations != 4 || s.GRPO.Beta != 0.04 {
		t.Fatalf("file values lost: %+v", s)
	}
	if s.GRPO.Epsilon != 0.3 {
		t.Errorf("environment: epsilon %v, want 0.3", s.GRPO.Epsilon)
	}
	if s.Rounds != 9 {
		t.Errorf("override: rounds %d, want 9 (flag beats environment)", s.Rounds)
	}
	if s.Generation.Temperature != 1 || s.GRPO.LossType != "token-mean" {
		t.Errorf("defaults missing: %+v", s.Generation)
	}
	if len(s.Members) != 2 || s.Members[1].View != 1 {
		t.Errorf("members = %+v", s.Members)
	}
	// The spec is plain JSON and reads back equal.
	js, err := JSON(s)
	if err != nil {
		t.Fatal(err)
	}
	var back RunSpec
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	js2, _ := JSON(&back)
	if string(js) != string(js2) {
		t.Errorf("JSON round trip differs:\n%s\n%s", js, js2)
	}
}

// TestKVCacheReachesTheRound: generation.kv_cache (file or override) is
// the round's cache type; left out it is float32.
func TestKVCacheReachesTheRound(t *testing.T) {
	s, err := Load(write(t, good), noEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if kv := rl.ConfigFromSpec(s).KV; kv != "" {
		t.Errorf("default kv cache %q, want empty (float32)", kv)
	}
	s, err = Load(write(t, strings.Replace(good, "num_generations: 4", "num_generations: 4\n  kv_cache: f16", 1)), noEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if kv := rl.ConfigFromSpec(s).KV; kv != model.KVHalf {
		t.Errorf("kv_cache: f16 gave the round %q", kv)
	}
}

func TestErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{good + "\nlearning_rate: 1\n", `unknown key "learning_rate"`},
		{strings.Replace(good, "beta: 0.04", "beta: 0.04\n  betta: 1", 1), `unknown key "grpo.betta"`},
		{strings.Replace(good, "view: 1", "view: 1, vieww: 2", 1), `members[1].vieww`},
		{strings.Replace(good, "peer-majority", "peer-magic", 1), "reward.mode"},
		{strings.Replace(good, "rounds: 3", "rounds: 0", 1), "rounds: must be positive"},
		{strings.Replace(good, "tasks: [arith, linear]", "tasks: [calculus]", 1), "data.tasks"},
		{strings.Replace(good, "beta: 0.04", "beta: -1", 1), "grpo.beta"},
		{strings.Replace(good, "beta: 0.04", "loss_type: sum", 1), "grpo.loss_type"},
		{strings.Replace(good, "name: b, base: bases/b", "name: a, base: bases/b", 1), "used twice"},
		{strings.Replace(good, "num_generations: 4", "num_generations: many", 1), "num_generations"},
	} {
		_, err := Load(write(t, tc.body), noEnv, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want it to mention %q", err, tc.want)
		}
	}
	if _, err := Load("", noEnv, map[string]any{"grpo.bogus": 1}); err == nil || !strings.Contains(err.Error(), "grpo.bogus") {
		t.Errorf("unknown override: %v", err)
	}
	one := strings.Replace(good, "  - {name: b, base: bases/b, view: 1}\n", "", 1)
	if _, err := Load(write(t, one), noEnv, nil); err == nil || !strings.Contains(err.Error(), "at least 2 members") {
		t.Errorf("peer reward with one member: %v", err)
	}
}

func TestBaseNextToTheSpec(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "bases", "m1"), 0o755)
	body := strings.Replace(good, "base: bases/a", "base: bases/m1", 1)
	p := filepath.Join(dir, "run.yaml")
	os.WriteFile(p, []byte(body), 0o644)
	s, err := Load(p, noEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Members[0].Base != filepath.Join(dir, "bases", "m1") {
		t.Errorf("base resolved to %q", s.Members[0].Base)
	}
	if s.Members[1].Base != "bases/b" { // exists nowhere: left for the workers
		t.Errorf("missing base rewritten to %q", s.Members[1].Base)
	}
}

// TestBadSpecsAreRefused runs the corpus in testdata/bad: each spec must be
// refused by Load with the message its "# want:" line (or its .want file)
// gives, naming the key and what is allowed.
func TestBadSpecsAreRefused(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".want") {
			continue
		}
		n++
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		if w, err := os.ReadFile(f + ".want"); err == nil {
			want = strings.TrimSpace(string(w))
		} else if first, _, _ := strings.Cut(string(body), "\n"); strings.HasPrefix(first, "# want: ") {
			want = strings.TrimPrefix(first, "# want: ")
		} else {
			t.Fatalf("%s: no expected message", f)
		}
		_, err = Load(f, func(string) string { return "" }, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v\n  want it to contain %q", filepath.Base(f), err, want)
		}
	}
	if n < 10 {
		t.Fatalf("only %d bad specs in the corpus", n)
	}
}

// TestDefaultsAreOneTable: a spec from a file that names only its members
// and one from JSON that names only its members get the same settings, the
// spec package's defaults.
func TestDefaultsAreOneTable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(p, []byte("members:\n  - {name: a, base: x}\n  - {name: b, base: y}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, err := Load(p, func(string) string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON RunSpec
	if err := json.Unmarshal([]byte(`{"members": [{"name": "a", "base": "x"}, {"name": "b", "base": "y"}]}`), &fromJSON); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(fromFile)
	b, _ := json.Marshal(fromJSON)
	if string(a) != string(b) {
		t.Errorf("defaults differ:\nfile %s\njson %s", a, b)
	}
}

// TestAnswerTypeInferredFromTheFile: a spec over a data file without
// data.answer_type gets the type that reads every label.
func TestAnswerTypeInferredFromTheFile(t *testing.T) {
	dir := t.TempDir()
	rows := `{"prompt": "Capital of France?", "answer": "Paris"}` + "\n" + `{"prompt": "Largest animal?", "answer": "blue whale"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "rows.jsonl"), []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "run.yaml")
	body := "name: x\nreward: {mode: self-vote}\ndata: {file: " + filepath.Join(dir, "rows.jsonl") + "}\nmembers:\n  - {name: a, base: " + dir + "}\n"
	if err := os.WriteFile(spec, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(spec, func(string) string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Data.AnswerType != "text" {
		t.Errorf("answer_type %q, want text", s.Data.AnswerType)
	}
	if r := datasets.AnswerRuleFromSpec(s.Data); r.Grade("The answer is the Blue Whale.", "blue whale") != 2 {
		t.Errorf("the spec's rule does not grade text answers: %+v", r)
	}
}

// TestWarmupByDefault: warmup is on unless turned off: warmup_ratio of
// the run's optimizer steps (rounded up) when warmup_steps is 0, the steps
// when set; a ratio of 1 or more is refused.
func TestWarmupByDefault(t *testing.T) {
	for _, tc := range []struct {
		rounds, steps, warmup int
		ratio                 float64
		want                  int
	}{
		{60, 1, 0, 0.05, 3},
		{30, 4, 0, 0.05, 6},
		{60, 1, 10, 0.05, 10},
		{60, 1, 0, 0, 0},
	} {
		s := spec.Default()
		if s.Optim.WarmupRatio != 0.05 {
			t.Fatalf("default warmup_ratio %v", s.Optim.WarmupRatio)
		}
		s.Rounds, s.GRPO.StepsPerGeneration, s.Optim.WarmupSteps, s.Optim.WarmupRatio = tc.rounds, tc.steps, tc.warmup, tc.ratio
		if got := s.Warmup(); got != tc.want || rl.ConfigFromSpec(&s).WarmupSteps != tc.want {
			t.Errorf("%+v: %d warmup steps, want %d", tc, got, tc.want)
		}
	}
	if err := validateOptim(spec.Optim{LearningRate: 1e-4, AdamBeta2: 0.999, AdamEpsilon: 1e-8, WarmupRatio: 1}); err == nil || !strings.Contains(err.Error(), "optim.warmup_ratio") {
		t.Errorf("ratio 1: %v", err)
	}
}

// TestCheckerInTheSpec: data.checker reaches the round and the
// evaluation; a command given as one string is split at spaces, and a
// script next to the spec is named absolutely (the checker runs in an
// empty directory); a program that cannot be found, negative limits,
// limits without a program and peer-judge are refused, naming the key.
func TestCheckerInTheSpec(t *testing.T) {
	p := write(t, good+"\n")
	dir := filepath.Dir(p)
	if err := os.WriteFile(filepath.Join(dir, "check.py"), []byte("print()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(good, "  tasks: [arith, linear]\n", "  tasks: [arith, linear]\n  checker: {command: sh check.py --strict, timeout_seconds: 5}\n", 1)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(p, noEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sh", filepath.Join(dir, "check.py"), "--strict"}
	if got := s.Data.Checker.Command; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("command %q, want %q", got, want)
	}
	c := rl.ConfigFromSpec(s).Checker
	if c == nil || c.Timeout.Seconds() != 5 || evaluate.OptionsFromSpec(s).Checker == nil {
		t.Fatalf("round checker %+v, evaluation %+v", c, evaluate.OptionsFromSpec(s).Checker)
	}
	if s, err := Load(write(t, good), noEnv, nil); err != nil || rl.ConfigFromSpec(s).Checker != nil {
		t.Fatalf("no checker: %+v, %v", rl.ConfigFromSpec(s).Checker, err)
	}
	for _, tc := range []struct{ set, want string }{
		{"checker: {command: [no-such-checker-program]}", "data.checker.command: no-such-checker-program"},
		{"checker: {command: [sh], timeout_seconds: -1}", "data.checker.timeout_seconds"},
		{"checker: {memory_mb: 100}", "data.checker.command: the program to run is required"},
	} {
		body := strings.Replace(good, "  tasks: [arith, linear]\n", "  tasks: [arith, linear]\n  "+tc.set+"\n", 1)
		if _, err := Load(write(t, body), noEnv, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.set, err, tc.want)
		}
	}
	judge := strings.Replace(strings.Replace(good, "mode: peer-majority", "mode: peer-judge", 1), "  tasks: [arith, linear]\n", "  tasks: [arith, linear]\n  checker: {command: [sh]}\n", 1)
	if _, err := Load(write(t, judge), noEnv, nil); err == nil || !strings.Contains(err.Error(), "peer-judge") {
		t.Errorf("peer-judge with a checker: %v", err)
	}
}

// TestFrozenPeer: members[].frozen loads, and a cohort with every member
// frozen is refused.
func TestFrozenPeer(t *testing.T) {
	body := strings.Replace(good, "{name: b, base: bases/b, view: 1}", "{name: b, base: bases/b, view: 1, frozen: true}", 1)
	s, err := Load(write(t, body), noEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Members[0].Frozen || !s.Members[1].Frozen {
		t.Errorf("members %+v", s.Members)
	}
	all := strings.Replace(body, "{name: a, base: bases/a}", "{name: a, base: bases/a, frozen: true}", 1)
	if _, err := Load(write(t, all), noEnv, nil); err == nil || !strings.Contains(err.Error(), "every member is frozen") {
		t.Errorf("all frozen: %v", err)
	}
}

// filled is a spec whose every field holds a value of its own, none a
// default: field i's number is i+1, its string "s<i>".
func filled() spec.RunSpec {
	var s spec.RunSpec
	i := 0
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		for f := 0; f < v.NumField(); f++ {
			x := v.Field(f)
			i++
			switch x.Kind() {
			case reflect.Struct:
				fill(x)
			case reflect.String:
				x.SetString(fmt.Sprintf("s%d", i))
			case reflect.Int:
				x.SetInt(int64(i))
			case reflect.Uint64:
				x.SetUint(uint64(i))
			case reflect.Float32, reflect.Float64:
				x.SetFloat(float64(i) + 0.5)
			case reflect.Bool:
				x.SetBool(true)
			case reflect.Slice:
				if x.Type().Elem().Kind() == reflect.String {
					x.Set(reflect.ValueOf([]string{fmt.Sprintf("s%d", i)}))
				}
			}
		}
	}
	fill(reflect.ValueOf(&s).Elem())
	s.Members = []spec.Member{{Name: "a", Base: "b", View: 1, Frozen: true}}
	return s
}

// TestEveryKeyDecodes: each key spec.Flatten names, set through viper as a
// file, the environment or a flag sets it, reaches its own field of the
// decoded spec: the decoder and the key table read one set of tags.
func TestEveryKeyDecodes(t *testing.T) {
	want := filled()
	v := viper.New()
	for k, x := range spec.Flatten(want) {
		if k == "members" {
			x = []any{map[string]any{"name": "a", "base": "b", "view": 1, "frozen": true}}
		}
		v.Set(k, x)
	}
	got, err := decode(v)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		t.Errorf("decoded\n%s\nwant\n%s", a, b)
	}
	if n := len(spec.Written(want)); n != len(spec.Keys()) {
		t.Errorf("the filled spec writes %d keys of %d", n, len(spec.Keys()))
	}
}

// TestGPUPairSpecFits: examples/gpu/qwen-pair.yaml, the spec the GPU path
// would run for the paper's kind of cohort, loads, and its two members'
// memory plans (the published Qwen2.5-0.5B and 1.5B shapes, its micro-batch,
// recompute and logit rows, sequences of a 128-token prompt and its
// completions) fit one 80 GiB GPU together.
func TestGPUPairSpecFits(t *testing.T) {
	s, err := Load("../examples/gpu/qwen-pair.yaml", func(string) string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, m := range s.Members {
		shape := map[string]string{"qwen-0.5b": "qwen2.5-0.5b", "qwen-1.5b": "qwen2.5-1.5b"}[m.Name]
		files, err := model.ShapeFiles(shape)
		if err != nil {
			t.Fatalf("member %s: %v", m.Name, err)
		}
		cfg, err := model.ParseConfig("config.json", files["config.json"])
		if err != nil {
			t.Fatal(err)
		}
		seq := 128 + s.Generation.MaxCompletion
		o := model.PlanOptions{MicroBatch: s.MicroBatchSize, Seq: seq, Slots: 64, Capacity: (seq + 63) / 64 * 64, Parts: 1, Tiled: true,
			Recompute: s.Recompute, LogitRows: s.LogitRows, BF16Weights: true}
		if m.LoRA != nil {
			l := model.LoRAOf(*m.LoRA)
			o.LoRA = &l
		}
		total += model.PlanBytes(cfg.Plan(o))
	}
	if total > 80<<30 {
		t.Errorf("the pair needs %s, more than one 80 GiB GPU", model.FormatBytes(total))
	}
	t.Logf("the pair's plans: %s of 80 GiB", model.FormatBytes(total))
}
