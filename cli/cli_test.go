package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/corl-project/corl/connect"
)

// run executes corl in-process and returns its exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), IO{In: strings.NewReader(""), Out: &out, Err: &errb}, args, func(string) string { return "" })
	return code, out.String(), errb.String()
}

func TestDataCommands(t *testing.T) {
	code, out, errs := run(t, "data", "tasks")
	if code != 0 || !strings.Contains(out, "arith") || !strings.Contains(out, "linear") {
		t.Fatalf("data tasks: exit %d, %s %s", code, out, errs)
	}
	code, out, _ = run(t, "data", "preview", "--task", "word", "--n", "2")
	if code != 0 || strings.Count(out, "rephrased:") != 2 || !strings.Contains(out, "The answer is") {
		t.Fatalf("data preview: exit %d\n%s", code, out)
	}
	dir := t.TempDir()
	file := dir + "/eval.parquet"
	if code, _, errs = run(t, "data", "export", "--task", "mod", "--split", "eval", "--eval", "7", "--out", file); code != 0 {
		t.Fatalf("export: %s", errs)
	}
	code, out, errs = run(t, "data", "check", "--file", file)
	if code != 0 || !strings.Contains(out, "7 rows, 7 with answers") || !strings.Contains(out, "answer type: number") ||
		!strings.Contains(out, "number 100%") {
		t.Fatalf("check: exit %d\n%s%s", code, out, errs)
	}
	text := dir + "/text.jsonl"
	os.WriteFile(text, []byte("{\"prompt\": \"Capital of France?\", \"answer\": \"Paris\"}\n{\"prompt\": \"2+2?\", \"answer\": \"4\"}\n"), 0o644)
	if code, out, errs = run(t, "data", "check", "--file", text); code != 0 || !strings.Contains(out, "answer type: text") ||
		!strings.Contains(out, "number 50%, text 100%") {
		t.Fatalf("check of text answers: exit %d\n%s%s", code, out, errs)
	}
	bad := dir + "/bad.jsonl"
	os.WriteFile(bad, []byte("{\"q\": \"x\", \"a\": \"1\"}\n{\"q\": \"y\"}\n"), 0o644)
	code, out, errs = run(t, "data", "check", "--file", bad, "--prompt-field", "q", "--answer-field", "a")
	if code == 0 || !strings.Contains(out, "bad.jsonl:line 2") || !strings.Contains(errs, "1 bad row") {
		t.Fatalf("check of a bad file: exit %d\n%s%s", code, out, errs)
	}
}

func TestPretrainGenerateAndEval(t *testing.T) {
	dir := t.TempDir() + "/base"
	code, out, errs := run(t, "pretrain", "--family", "llama", "--layers", "1", "--dim", "32", "--heads", "2", "--tasks", "mod",
		"--per-task", "20", "--eval", "3", "--steps", "3", "--batch", "4", "--max-new-tokens", "8", "--blind-spot", "odd", "--blind-rate", "0.5", "--out", dir)
	if code != 0 || !strings.Contains(out, "saved") || !strings.Contains(out, "mod") {
		t.Fatalf("pretrain: exit %d\n%s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(dir + "/pretrain.json"); !strings.Contains(string(b), `"blind_spot": {`) {
		t.Errorf("pretrain.json does not record the blind spot:\n%s", b)
	}
	code, out, errs = run(t, "eval", "--model", dir, "--tasks", "mod,seq", "--n", "6", "--max-new-tokens", "8", "--blind-spot", "odd")
	if code != 0 || !strings.Contains(out, "pass@1") || !strings.Contains(out, "seq") {
		t.Fatalf("eval: exit %d\n%s%s", code, out, errs)
	}
	// The blind spot's class (odd c of the 6 mod problems) and the rest
	// (the others and all 6 seq problems) scored apart.
	in := regexp.MustCompile(`odd blind spot +pass@1 \S+ \[\S+, \S+\] on (\d+) problems`).FindStringSubmatch(out)
	rest := regexp.MustCompile(`the rest +pass@1 \S+ \[\S+, \S+\] on (\d+) problems`).FindStringSubmatch(out)
	if in == nil || rest == nil || in[1] == "0" || atoiT(in[1])+atoiT(rest[1]) != 12 || atoiT(rest[1]) < 6 {
		t.Errorf("eval --blind-spot:\n%s", out)
	}
	code, out, errs = run(t, "generate", "--model", dir, "--prompt", "What is 2+2?", "--template", "qa", "--max-new-tokens", "5", "--n", "2", "--temperature", "1")
	if code != 0 || strings.Count(out, "--- sample") != 2 {
		t.Fatalf("generate: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, "generate", "--model", dir, "--prompt", "What is 2+2?", "--template", "qa", "--max-new-tokens", "5", "--n", "2", "--temperature", "1", "--kv-cache", "f16")
	if code != 0 || strings.Count(out, "--- sample") != 2 {
		t.Fatalf("generate --kv-cache f16: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs = run(t, "generate", "--model", dir, "--prompt", "hi", "--kv-cache", "f8"); code == 0 || !strings.Contains(errs, "--kv-cache") {
		t.Fatalf("generate --kv-cache f8: exit %d, %s", code, errs)
	}
	// The checkpoint's own chat template (tokenizer_config.json), and a
	// clear error without one.
	if code, _, errs = run(t, "generate", "--model", dir, "--prompt", "hi", "--template", "model"); code == 0 || !strings.Contains(errs, "tokenizer_config.json") {
		t.Fatalf("generate --template model without a config: exit %d, %s", code, errs)
	}
	os.WriteFile(dir+"/tokenizer_config.json", []byte(`{"chat_template": "Q: {{ messages[0].content }}\nA:", "eos_token": "<|endoftext|>"}`), 0o644)
	code, out, errs = run(t, "generate", "--model", dir, "--prompt", "What is 2+2?", "--template", "model", "--max-new-tokens", "3")
	if code != 0 {
		t.Fatalf("generate --template model: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = run(t, "eval", "--model", dir, "--tasks", "nope")
	if code == 0 || !strings.Contains(errs, "--tasks") {
		t.Fatalf("bad task: exit %d, %s", code, errs)
	}
}

// TestBackendCudaFailsAtStart: every compute command takes --backend (or
// $CORL_BACKEND); without a device, cuda fails before any work with the
// driver's reason.
func TestBackendCudaFailsAtStart(t *testing.T) {
	if _, err := newBackend("cuda", 0); err == nil {
		t.Skip("a CUDA device is present")
	}
	dir := t.TempDir()
	out := dir + "/out"
	for _, args := range [][]string{
		{"train", "--local", "-f", "../examples/local.yaml", "--set", "output_dir=" + out},
		{"eval", "--model", "../examples/bases/llama-small"},
		{"generate", "--model", "../examples/bases/llama-small", "--prompt", "Compute 1+2."},
		{"pretrain", "--out", out},
		{"worker", "--address", "127.0.0.1:1"},
	} {
		for _, viaEnv := range []bool{false, true} {
			env := func(string) string { return "" }
			a := append([]string(nil), args...)
			if viaEnv {
				env = func(k string) string {
					if k == "CORL_BACKEND" {
						return "cuda"
					}
					return ""
				}
			} else {
				a = append(a, "--backend", "cuda")
			}
			var o, e bytes.Buffer
			code := Main(context.Background(), IO{In: strings.NewReader(""), Out: &o, Err: &e}, a, env)
			if code == 0 || !strings.Contains(e.String(), "--backend cuda: no CUDA device: ") {
				t.Errorf("%v (env %v): exit %d, stderr %q; want the driver's reason", args, viaEnv, code, e.String())
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatalf("%v: wrote %s before refusing the backend", args, out)
			}
		}
	}
}

// TestGenerateStopsAndIsBounded: corl generate stops at once when its
// context is cancelled (Ctrl-C, SIGTERM) and refuses an unbounded --n.
func TestGenerateStopsAndIsBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var o, e bytes.Buffer
	code := Main(ctx, IO{In: strings.NewReader(""), Out: &o, Err: &e},
		[]string{"generate", "--model", "../examples/bases/llama-small", "--prompt", "Compute 1+2.", "--n", "500", "--max-new-tokens", "200"},
		func(string) string { return "" })
	if code == 0 || !strings.Contains(e.String(), "context canceled") {
		t.Errorf("cancelled generate: exit %d, stderr %q", code, e.String())
	}
	code, _, errs := run(t, "generate", "--model", "../examples/bases/llama-small", "--prompt", "x", "--n", "100000000")
	if code == 0 || !strings.Contains(errs, "--n 100000000: must be in 1..10000") {
		t.Errorf("huge --n: exit %d, stderr %q", code, errs)
	}
}

// TestGenerateRefusesBadSampling: sampling flags outside their range are
// refused before the model loads, naming the flag; a stop string may be any
// text, a newline included (it is not split as a comma-separated list).
func TestGenerateRefusesBadSampling(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"--temperature", "-1", "--temperature -1: must be 0 (greedy) or positive"},
		{"--top-k", "-1", "--top-k -1: must be 0 (all tokens) or positive"},
		{"--top-p", "0", "--top-p 0: must be in (0, 1]"},
		{"--top-p", "1.5", "--top-p 1.5: must be in (0, 1]"},
	} {
		code, _, errs := run(t, "generate", "--model", "../examples/bases/llama-small", "--prompt", "x", tc.flag, tc.value)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%s %s: exit %d, stderr %q; want %q", tc.flag, tc.value, code, errs, tc.want)
		}
	}
	code, out, errs := run(t, "generate", "--model", "../examples/bases/llama-small", "--prompt", "Compute 1+2.",
		"--template", "qa", "--max-new-tokens", "40", "--temperature", "1", "--stop", "\n", "--stop", "a,b")
	if code != 0 {
		t.Fatalf("--stop with a newline: exit %d, stderr %q", code, errs)
	}
	if strings.Contains(strings.TrimSuffix(out, "\n"), "\n") {
		t.Errorf("generation went past the newline stop string: %q", out)
	}
}

// TestConnectionFindsRunningDev: with no address, store or config given,
// commands connect to the server and store a running corl dev published;
// explicit settings win, and a dead dev's file is ignored.
func TestConnectionFindsRunningDev(t *testing.T) {
	cfg := t.TempDir()
	env := func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return cfg
		}
		return ""
	}
	if err := connect.PublishDev(env, connect.DevInfo{Address: "127.0.0.1:7999", StoreDir: "/srv/blobs", PID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	conn, err := (&connFlags{}).load(env)
	if err != nil {
		t.Fatal(err)
	}
	if conn.Temporal.Address != "127.0.0.1:7999" || conn.Store.Local != "/srv/blobs" {
		t.Errorf("connection %+v %+v, want the running dev's", conn.Temporal, conn.Store)
	}
	conn, _ = (&connFlags{address: "10.0.0.1:7233"}).load(env)
	if conn.Temporal.Address != "10.0.0.1:7233" || conn.Store.Local == "/srv/blobs" {
		t.Errorf("an explicit --address must not pick up the dev's store: %+v %+v", conn.Temporal, conn.Store)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	connect.PublishDev(env, connect.DevInfo{Address: "127.0.0.1:7999", StoreDir: "/srv/blobs", PID: dead.Process.Pid})
	if conn, _ = (&connFlags{}).load(env); conn.Store.Local == "/srv/blobs" {
		t.Error("a dev that is no longer running was used")
	}
}

// TestEvalCompare: corl eval prints intervals, and --compare the paired
// difference of two checkpoints on the same problems with McNemar's test.
func TestEvalCompare(t *testing.T) {
	code, out, errs := run(t, "eval", "--model", "../examples/bases/gpt2-small", "--compare", "../examples/bases/llama-small",
		"--tasks", "arith", "--n", "12", "--max-level", "1", "--max-new-tokens", "48", "--samples", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"pass@1 ", "] on 12 test problems", "difference (--compare minus --model, ../examples/bases/llama-small minus ../examples/bases/gpt2-small): pass@1 ", "McNemar: ", "sampled pass@1 ", "what each could teach the other (votes of the samples): where ../examples/bases/gpt2-small's vote is wrong"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestOwnTaskFromAFile: a task corl does not ship (weekday arithmetic,
// text answers) goes from the user's file alone through a base pretrained
// on the file's pretrain rows, an RL run on its rl rows, and an evaluation
// of its test rows.
func TestOwnTaskFromAFile(t *testing.T) {
	dir := t.TempDir()
	days := []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	var rows strings.Builder
	for i := 0; i < 600; i++ {
		d, k := i%7, 1+i/7%12
		fmt.Fprintf(&rows, `{"q": "Which day comes %d days after %s? (%d)", "a": %q, "s": "%s plus %d days is %s."}`+"\n",
			k, days[d], i, days[(d+k)%7], days[d], k, days[(d+k)%7])
	}
	file := dir + "/weekdays.jsonl"
	if err := os.WriteFile(file, []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	base := dir + "/base"
	code, out, errs := run(t, "pretrain", "--file", file, "--prompt-field", "q", "--answer-field", "a", "--solution-field", "s",
		"--family", "llama", "--layers", "1", "--dim", "32", "--heads", "2", "--steps", "4", "--batch", "4", "--eval", "4",
		"--max-new-tokens", "12", "--out", base)
	if code != 0 || !strings.Contains(errs, "answer type text") {
		t.Fatalf("pretrain --file: exit %d\n%s%s", code, out, errs)
	}
	rep, _ := os.ReadFile(base + "/pretrain.json")
	if !strings.Contains(string(rep), `"file"`) || !strings.Contains(string(rep), `"answer_type": "text"`) {
		t.Errorf("pretrain.json does not record the file and its answer type:\n%s", rep)
	}
	spec := dir + "/run.yaml"
	body := fmt.Sprintf("name: own\nrounds: 1\nprompts_per_round: 2\nreward: {mode: self-vote}\n"+
		"data: {file: %s, prompt_field: q, answer_field: a}\ngeneration: {num_generations: 2, max_completion_length: 8}\n"+
		"eval: {size: 3}\noutput_dir: %s\nmembers:\n  - {name: m, base: %s}\n", file, dir+"/runs", base)
	if err := os.WriteFile(spec, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "train", "--local", "-f", spec); code != 0 {
		t.Fatalf("train on the file: exit %d\n%s%s", code, out, errs)
	}
	metrics, _ := os.ReadFile(dir + "/runs/own/metrics.jsonl")
	if !strings.Contains(string(metrics), `"eval"`) || !strings.Contains(string(metrics), `weekdays.jsonl`) {
		t.Errorf("the run did not evaluate the file's held-out rows:\n%.600s", metrics)
	}
	code, out, errs = run(t, "eval", "--model", base, "--file", file, "--prompt-field", "q", "--answer-field", "a", "--n", "5", "--max-new-tokens", "8")
	if code != 0 || !strings.Contains(out, "on 5 test problems") {
		t.Fatalf("eval --file: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, "pretrain", "--file", file, "--tasks", "mod", "--out", dir+"/x"); code == 0 || !strings.Contains(errs, "--tasks and --file") {
		t.Errorf("--tasks with --file: exit %d, %s", code, errs)
	}
}

func atoiT(s string) int { n, _ := strconv.Atoi(s); return n }

// TestEnumFlagsRefuseAtParse: the shared enumerated flags refuse a bad
// value naming the flag and what it allows, before any work.
func TestEnumFlagsRefuseAtParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", "--model", "../examples/bases/llama-small", "--prompt", "x", "--kv-cache", "f8"}, `invalid argument "f8" for "--kv-cache" flag: kv cache type "f8": want f32 or f16`},
		{[]string{"eval", "--model", "../examples/bases/llama-small", "--split", "train"}, `invalid argument "train" for "--split" flag: "train" is not one of test, validation`},
		{[]string{"data", "export", "--task", "mod", "--split", "test"}, `"test" is not one of eval, pretrain, rl`},
	} {
		code, _, errs := run(t, tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, errs, tc.want)
		}
	}
}
