package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchLlamaCppRefusals: the command stops, naming the cause, when
// the reference is absent, reads another vocabulary, reports an error, or
// runs a different model (here one answering uniform probabilities), and
// on bad flags. (make bench-llamacpp and CI's llamacpp-check run it
// against llama.cpp itself.)
func TestBenchLlamaCppRefusals(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// Uniform next-token probabilities and greedy token 0 for every prompt.
	uniform := script("uniform", `while read op k n; do
  case $op in
  load) echo "ok 257" ;;
  check) i=0; while [ $i -lt $n ]; do read prompt
      printf probs; j=0; while [ $j -lt 257 ]; do printf ' 0.00389105'; j=$((j+1)); done; echo
      printf greedy; j=0; while [ $j -lt $k ]; do printf ' 0'; j=$((j+1)); done; echo
      i=$((i+1)); done ;;
  esac
done
`)
	small := script("small", "while read op rest; do echo 'ok 5'; done\n")
	failing := script("failing", "while read op rest; do echo 'error load: out of memory'; done\n")
	small2 := []string{"--layers", "1", "--dim", "32", "--heads", "2", "--prompt-tokens", "4", "--greedy", "2"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--reference", uniform}, "llama.cpp runs a different model"},
		{[]string{"--reference", small}, "read a vocabulary of 5"},
		{[]string{"--reference", failing}, "load: out of memory"},
		{[]string{"--reference", filepath.Join(dir, "absent")}, "--reference"},
		{[]string{"--vocab", "300"}, "--vocab: 300"},
		{[]string{"--batch", "0"}, "each must be positive"},
		{[]string{"--reps", "0"}, "must be positive"},
		{[]string{"--family", "gpt2", "--reference", uniform}, "family gpt2"},
	} {
		args := append(append([]string{"bench", "llamacpp"}, small2...), tc.args...)
		if code, _, errs := run(t, args...); code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errs, tc.want)
		}
	}
}
