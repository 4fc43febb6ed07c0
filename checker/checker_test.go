package checker

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readable is a directory the checker's user can read (t.TempDir is 0700).
func readable(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, p := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// script writes a bash checker into a readable directory.
func script(t *testing.T, body string) []string {
	t.Helper()
	p := filepath.Join(readable(t), "check.sh")
	if err := os.WriteFile(p, []byte("#!/bin/bash\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

var rows = []Item{{Prompt: "Who?", Response: "The answer is: The Moon.", Answer: "moon"}, {Prompt: "What?", Response: "no idea"}}

func TestExampleCheckers(t *testing.T) {
	py := Spec{Command: []string{"python3", abs(t, "../examples/checkers/words.py")}}
	bin := filepath.Join(readable(t), "numeric")
	if out, err := exec.Command("go", "build", "-o", bin, "../examples/checkers/numeric").CombinedOutput(); err != nil {
		t.Fatalf("build the Go example: %v\n%s", err, out)
	}
	for name, tc := range map[string]struct {
		spec  Spec
		items []Item
		want  string
	}{
		"python words": {py, []Item{rows[0], {Prompt: "What?", Response: "..."}}, "moon true | none -"},
		"go numeric": {Spec{Command: []string{bin}}, []Item{{Prompt: "1/3?", Response: "1/3 = 0.3333333", Answer: "0.3333333"},
			{Prompt: "2+2?", Response: "I think 5"}}, "0.333333 true | 5 -"},
	} {
		t.Run(name, func(t *testing.T) {
			vs, err := Run(context.Background(), tc.spec, tc.items)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range vs {
				k, c := "none", "-"
				if v.AnswerKey != nil {
					k = *v.AnswerKey
				}
				if v.Correct != nil {
					c = fmt.Sprint(*v.Correct)
				}
				got = append(got, k+" "+c)
			}
			if g := strings.Join(got, " | "); g != tc.want {
				t.Errorf("verdicts %q, want %q", g, tc.want)
			}
		})
	}
}

func abs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestBadCheckersFailClearly: a checker that hangs, crashes, prints garbage,
// answers too few rows or runs out of memory fails with an error naming
// the program and, where one is to blame, the row.
func TestBadCheckersFailClearly(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		spec Spec
		want []string
	}{
		"hangs":        {body: "sleep 60\n", spec: Spec{Timeout: time.Second}, want: []string{"did not answer 2 rows within 1s (killed)"}},
		"crashes":      {body: "echo boom >&2\nexit 3\n", want: []string{"exit status 3", "its stderr: boom"}},
		"garbage":      {body: "cat >/dev/null\necho hello\n", want: []string{"line 1 of its output is not a JSON object", `"hello"`}},
		"short":        {body: "cat >/dev/null\necho '{\"answer_key\": \"x\"}'\n", want: []string{"answered 1 of 2 rows", `row 1 (prompt "What?")`}},
		"bad field":    {body: "cat >/dev/null\necho '{\"answer_key\": 7}'\necho '{}'\n", want: []string{`row 0 (prompt "Who?"): answer_key 7 is not a string`}},
		"out of order": {body: "cat >/dev/null\necho '{\"id\": 1, \"correct\": true}'\n", want: []string{"answers id 1, want 0"}},
		"memory": {body: "x=$(head -c 400000000 /dev/zero | tr '\\0' a)\necho done\n", spec: Spec{MemoryMB: 64},
			want: []string{"cannot allocate"}},
	} {
		t.Run(name, func(t *testing.T) {
			s := tc.spec
			s.Command = script(t, tc.body)
			_, err := Run(context.Background(), s, rows)
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range append(tc.want, "checker "+s.Command[0]) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestCheckerIsConfined: a checker may write in its own directory and
// nowhere else, even a directory anyone may write to, and cannot reach
// the network (a server listening on this machine's loopback included).
func TestCheckerIsConfined(t *testing.T) {
	outside := readable(t)
	if err := os.Chmod(outside, 0o777); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	body := fmt.Sprintf(`cat >/dev/null
try() { if eval "$1" 2>/dev/null; then echo yes; else echo no; fi; }
inside=$(try 'echo x > ./mine && [ -s ./mine ]')
outside=$(try 'echo x > %s/stolen')
tmp=$(try 'echo x > /tmp/corl-checker-escape-%d')
net=$(try '(exec 3<>/dev/tcp/127.0.0.1/%d)')
echo "{\"answer_key\": \"inside=$inside outside=$outside tmp=$tmp net=$net\"}"
echo '{"answer_key": null}'
`, outside, port, port)
	vs, err := Run(context.Background(), Spec{Command: script(t, body)}, rows)
	if err != nil {
		t.Fatal(err)
	}
	if got := *vs[0].AnswerKey; got != "inside=yes outside=no tmp=no net=no" {
		t.Errorf("confinement: %s", got)
	}
	if vs[1].AnswerKey != nil || !vs[1].HasKey {
		t.Errorf("a null answer_key: %+v", vs[1])
	}
	if _, err := os.Stat(filepath.Join(outside, "stolen")); err == nil {
		t.Error("the checker wrote outside its directory")
	}
	os.Remove(fmt.Sprintf("/tmp/corl-checker-escape-%d", port))
}

func TestKeyIsAFunctionOfCheckerAndRows(t *testing.T) {
	a, b := Spec{Command: []string{"x"}}, Spec{Command: []string{"y"}}
	if Key(a, rows) != Key(a, rows) || Key(a, rows) == Key(b, rows) || Key(a, rows) == Key(a, rows[:1]) {
		t.Error("cache keys do not follow the checker and its rows")
	}
}
