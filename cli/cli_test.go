package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// run executes corl in-process and returns its exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), IO{In: strings.NewReader(""), Out: &out, Err: &errb}, args, func(string) string { return "" })
	return code, out.String(), errb.String()
}

func TestBenchTrainPrintsSpeed(t *testing.T) {
	code, out, errs := run(t, "bench", "train", "--family", "llama", "--layers", "1", "--dim", "32", "--heads", "2",
		"--vocab", "50", "--batch", "2", "--seq", "8", "--steps", "2", "--warmup", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"ms/step", "tokens/s", "GFLOP/s", "llama"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "step 2/2") {
		t.Errorf("no per-step progress on stderr:\n%s", errs)
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
