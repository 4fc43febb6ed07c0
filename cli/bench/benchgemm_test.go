package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBenchGemmAgainstAReference: corl bench gemm times the shapes it is
// given, round after round in turn with the reference program on the same
// thread count, and divides its best round by the reference's best; a
// reference that answers for another shape, bad --shapes or --rounds, is
// refused by name.
func TestBenchGemmAgainstAReference(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref")
	// Prints each shape back with a GFLOP/s of M, 3M, then 2M (its best
	// in the middle), logging each question on stderr, and the thread
	// count it was given.
	script := "#!/bin/sh\necho \"threads $OPENBLAS_NUM_THREADS\" >&2\ni=0\nwhile read m n k; do i=$((i+1)); case $i in 2) g=3;; 3) g=2;; *) g=1;; esac; echo \"asked $m $n $k\" >&2; echo \"$m $n $k $((m*g))\"; done\n"
	if err := os.WriteFile(ref, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "bench", "gemm", "--threads", "1", "--shapes", "2x8x16", "--rounds", "3", "--reference", ref)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "threads 1") {
		t.Errorf("the reference was not run on one thread: %q", errs)
	}
	if n := strings.Count(errs, "asked 2 8 16"); n != 3 {
		t.Errorf("the reference was asked for the shape %d times, want once a round (3): %q", n, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "corl / reference") {
		t.Fatalf("output:\n%s", out)
	}
	f := strings.Fields(lines[2])
	if len(f) != 9 || f[0] != "2x8x16" || f[6] != "6.0" {
		t.Fatalf("row %q: want shape 2x8x16 with the reference's best round, 6.0 GFLOP/s", lines[2])
	}
	// The share is of the best rounds; the rounds' own shares (corl's
	// per-call figure over the reference's 2, 6, 4) are a range around it.
	plain, _ := strconv.ParseFloat(f[4], 64)
	share, _ := strconv.ParseFloat(f[7], 64)
	var lo, hi float64
	if _, err := fmt.Sscanf(f[8], "%g-%g", &lo, &hi); err != nil || lo > share+0.01 || hi < share-0.01 {
		t.Errorf("rounds' shares %q: want a range lo-hi around the best rounds' share %v", f[8], share)
	}
	if d := plain/6 - share; d > 0.02 || d < -0.02 { // plain has one decimal
		t.Errorf("share %v, want corl's best %v over the reference's best 6.0", share, plain)
	}
	wrong := filepath.Join(dir, "wrong")
	if err := os.WriteFile(wrong, []byte("#!/bin/sh\nwhile read m n k; do echo \"$k $n $m 1\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shapes", "2x8x16", "--reference", wrong}, "not the one asked for"},
		{[]string{"--shapes", "2x8"}, `"2x8" is not MxNxK`},
		{[]string{"--shapes", "2x0x4"}, `"0" is not a positive integer`},
		{[]string{"--shapes", "2x2x2", "--rounds", "0"}, "--rounds: 0"},
		{[]string{"--shapes", "2x2x2", "--reference", filepath.Join(dir, "absent")}, "--reference"},
	} {
		if code, _, errs := run(t, append([]string{"bench", "gemm"}, tc.args...)...); code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestBenchTrainAndGenerateAgainstAReference: with --reference, bench
// train and bench generate time the reference's 1024^3 matmul after each
// step and print the step's share of it; a reference that answers for
// another shape is refused.
func TestBenchTrainAndGenerateAgainstAReference(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref")
	// 0.5 GFLOP/s for every shape: a step's share of it is twice its rate.
	if err := os.WriteFile(ref, []byte("#!/bin/sh\nwhile read m n k; do echo \"$m $n $k 0.5\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "bench", "train", "--family", "llama", "--layers", "1", "--dim", "32", "--heads", "2",
		"--vocab", "50", "--batch", "2", "--seq", "8", "--steps", "1", "--warmup", "0", "--threads", "1", "--reference", ref)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[1], "share of reference") || !strings.Contains(lines[3], "(reference 0.5-0.5)") {
		t.Fatalf("output:\n%s", out)
	}
	f := strings.Fields(lines[2])
	if len(f) != 6 {
		t.Fatalf("row %q: want 6 cells", lines[2])
	}
	rate, err1 := strconv.ParseFloat(f[3], 64)
	share, err2 := strconv.ParseFloat(f[5], 64)
	if err1 != nil || err2 != nil || math.Abs(share-2*rate) > 0.15 {
		t.Errorf("row %q: want the share of reference twice the GFLOP/s with attention", lines[2])
	}
	code, out, errs = run(t, "bench", "generate", "--family", "llama", "--layers", "1", "--dim", "32", "--heads", "2",
		"--batch", "2", "--prompt-tokens", "4", "--new", "4", "--reps", "1", "--warmup", "0", "--reference", ref)
	if code != 0 || !strings.Contains(out, "share of the reference's 1024^3 matmul") || !strings.Contains(out, "of the reference's)") || !strings.Contains(out, "(reference 0.5-0.5)") {
		t.Fatalf("generate: exit %d, output:\n%s%s", code, out, errs)
	}
	wrong := filepath.Join(dir, "wrong")
	if err := os.WriteFile(wrong, []byte("#!/bin/sh\nwhile read m n k; do echo \"1 2 3 1\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for cmd, args := range map[string][]string{
		"train":    {"--steps", "1"},
		"generate": {"--reps", "1", "--prompt-tokens", "4", "--new", "4"},
	} {
		code, _, errs := run(t, append([]string{"bench", cmd, "--layers", "1", "--dim", "32", "--heads", "2", "--batch", "2",
			"--warmup", "0", "--reference", wrong}, args...)...)
		if code == 0 || !strings.Contains(errs, "--reference") || !strings.Contains(errs, "not the one asked for") {
			t.Errorf("%s with a reference answering another shape: exit %d, stderr %q", cmd, code, errs)
		}
	}
}
