package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchGemmAgainstAReference: corl bench gemm times the shapes it is
// given and divides by what the reference program prints for each, on
// the same thread count; a reference that answers for another shape, or
// bad --shapes, is refused by name.
func TestBenchGemmAgainstAReference(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref")
	// Prints each shape back with a GFLOP/s of M, and the thread count it
	// was given on stderr.
	script := "#!/bin/sh\necho \"threads $OPENBLAS_NUM_THREADS\" >&2\nwhile read m n k; do echo \"$m $n $k $m\"; done\n"
	if err := os.WriteFile(ref, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "bench", "gemm", "--threads", "1", "--shapes", "2x8x16", "--reference", ref)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "threads 1") {
		t.Errorf("the reference was not run on one thread: %q", errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "corl / reference") {
		t.Fatalf("output:\n%s", out)
	}
	f := strings.Fields(lines[2])
	if len(f) != 8 || f[0] != "2x8x16" || f[6] != "2.0" {
		t.Errorf("row %q: want shape 2x8x16 with the reference's 2.0 GFLOP/s", lines[2])
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
		{[]string{"--shapes", "2x2x2", "--reference", filepath.Join(dir, "absent")}, "--reference"},
	} {
		if code, _, errs := run(t, append([]string{"bench", "gemm"}, tc.args...)...); code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errs, tc.want)
		}
	}
}
