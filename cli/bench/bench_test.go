package bench

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/corl-project/corl/cli"
)

// run executes corl, with the bench commands, in-process and returns its
// exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runEnv(t, func(string) string { return "" }, args...)
}

func runEnv(t *testing.T, env func(string) string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, args, env, Commands)
	return code, out.String(), errb.String()
}

func TestBenchTrainPrintsSpeed(t *testing.T) {
	code, out, errs := run(t, "bench", "train", "--family", "llama", "--layers", "1", "--dim", "32", "--heads", "2",
		"--vocab", "50", "--batch", "2", "--seq", "8", "--steps", "2", "--warmup", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"ms/step", "tokens/s", "GFLOP/s", "llama", "share of peak", "peak: 1024^3 matmul after each timed step"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "step 2/2") {
		t.Errorf("no per-step progress on stderr:\n%s", errs)
	}
}

// TestBenchGenerateKVCache: bench generate on either cache type prints
// its speed, the cache it used, the decoding steps' rate apart from the
// prefill (not without a cache) and the peak measured after each
// repetition; an unknown type or no repetitions is refused, naming the
// flag.
func TestBenchGenerateKVCache(t *testing.T) {
	for _, kv := range []string{"f32", "f16"} {
		code, out, errs := run(t, "bench", "generate", "--family", "llama", "--layers", "1", "--dim", "32", "--heads", "2",
			"--batch", "4", "--prompt-tokens", "8", "--new", "4", "--reps", "3", "--warmup", "0", "--kv-cache", kv)
		if code != 0 {
			t.Fatalf("--kv-cache %s: exit %d: %s", kv, code, errs)
		}
		for _, want := range []string{"kv cache " + kv, "generated tokens/s", "generated tokens alone", "decoding steps alone", "peak: 1024^3 matmul after each repetition"} {
			if !strings.Contains(out, want) {
				t.Errorf("--kv-cache %s: output lacks %q:\n%s", kv, want, out)
			}
		}
	}
	// Without a cache there is no prefill to set apart.
	code, out, errs := run(t, "bench", "generate", "--layers", "1", "--dim", "32", "--heads", "2", "--batch", "2", "--prompt-tokens", "4", "--new", "2", "--reps", "1", "--warmup", "0", "--no-cache")
	if code != 0 || !strings.Contains(out, "generated tokens alone") || strings.Contains(out, "decoding steps alone") {
		t.Errorf("--no-cache: exit %d, stderr %q, output:\n%s\nwant no decoding-steps line", code, errs, out)
	}
	for _, args := range [][]string{{"--kv-cache", "bf16"}, {"--reps", "0"}} {
		flag := args[0]
		code, _, errs := run(t, append([]string{"bench", "generate", "--layers", "1", "--dim", "32", "--heads", "2", "--batch", "2", "--prompt-tokens", "4", "--new", "2"}, args...)...)
		if code == 0 || !strings.Contains(errs, flag) {
			t.Errorf("%v: exit %d, stderr %q; want a failure naming %s", args, code, errs, flag)
		}
	}
}

func TestBenchTrainBadConfigNamesField(t *testing.T) {
	code, _, errs := run(t, "bench", "train", "--family", "gpt2", "--dim", "30", "--heads", "4")
	if code == 0 || !strings.Contains(errs, "hidden_size") {
		t.Fatalf("exit %d, stderr %q; want a failure naming hidden_size", code, errs)
	}
	code, _, errs = run(t, "bench", "train", "--backend", "tpu")
	if code == 0 || !strings.Contains(errs, "--backend") {
		t.Fatalf("exit %d, stderr %q; want a failure naming --backend", code, errs)
	}
}

// TestBenchRoundPrintsStages: corl bench round runs a spec's rounds and
// prints a row per stage with the round's share and the matmul peak, and
// the matmul work the rounds ran.
func TestBenchRoundPrintsStages(t *testing.T) {
	dir := t.TempDir()
	if code, out, errs := run(t, "pretrain", "--family", "llama", "--layers", "1", "--dim", "32", "--heads", "2", "--tasks", "mod",
		"--per-task", "20", "--eval", "3", "--steps", "2", "--batch", "4", "--max-new-tokens", "8", "--out", dir+"/b"); code != 0 {
		t.Fatalf("pretrain: exit %d\n%s%s", code, out, errs)
	}
	spec := dir + "/run.yaml"
	body := "name: br\nrounds: 2\nprompts_per_round: 2\ndata: {tasks: [mod], rl_size: 4}\nreward: {mode: self-vote}\n" +
		"generation: {num_generations: 2, max_completion_length: 8}\neval: {size: 2}\nmembers:\n  - {name: m, base: " + dir + "/b}\n"
	if err := os.WriteFile(spec, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "bench", "round", "-f", spec, "--rounds", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"matmul peak", "generate", "logprob recompute", "grade", "update", "evaluate (once)", "checkpoint (once)", "share of peak", "matmuls run"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := run(t, "bench", "round", "-f", spec, "--rounds", "0"); code == 0 || !strings.Contains(errs, "--rounds") {
		t.Errorf("--rounds 0: exit %d, %s", code, errs)
	}
}

// TestBenchCudaFailsAtStart: the bench commands take --backend (or
// $CORL_BACKEND); without a device, cuda fails before any work with the
// driver's reason.
func TestBenchCudaFailsAtStart(t *testing.T) {
	for _, args := range [][]string{{"bench", "train", "--steps", "1"}, {"bench", "generate", "--reps", "1"}} {
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
			code, _, errs := runEnv(t, env, a...)
			if code == 0 {
				t.Skip("a CUDA device is present")
			}
			if !strings.Contains(errs, "--backend cuda: no CUDA device: ") {
				t.Errorf("%v (env %v): exit %d, stderr %q; want the driver's reason", args, viaEnv, code, errs)
			}
		}
	}
}
