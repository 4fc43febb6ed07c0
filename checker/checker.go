package checker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ErrTimeout is returned (wrapped) when the checker did not answer within
// its timeout: the one failure that another try may not repeat.
var ErrTimeout = errors.New("timed out")

// Spec names a checker and its limits (the run spec's checker section).
type Spec struct {
	// Command is the program and its arguments, e.g. [python3,
	// /abs/check.py]: the program is looked up on the sandbox's PATH (or
	// taken as a path); arguments are passed as they are, and the checker
	// runs in an empty directory, so files it reads must be named by
	// absolute paths that its user (nobody, when corl runs as root) can
	// read.
	Command []string `json:"command" mapstructure:"command"`
	// Timeout bounds one batch (0: a minute).
	Timeout time.Duration `json:"timeout,omitempty" mapstructure:"timeout"`
	// MemoryMB bounds the program's address space (0: 1024).
	MemoryMB int `json:"memory_mb,omitempty" mapstructure:"memory_mb"`
	// Processes bounds the processes the program may run at once (0: 32).
	Processes int `json:"processes,omitempty" mapstructure:"processes"`
}

// Item is one row for the checker.
type Item struct {
	Prompt   string `json:"prompt"`
	Response string `json:"response"`
	Answer   string `json:"answer,omitempty"`
}

// Verdict is the checker's word on one row; a field it did not write is
// nil.
type Verdict struct {
	AnswerKey *string `json:"answer_key"`
	HasKey    bool    `json:"-"` // answer_key was present (null: no answer)
	Correct   *bool   `json:"correct,omitempty"`
}

func (s Spec) name() string { return strings.Join(s.Command, " ") }

// sandboxArg makes a corl binary (or a test binary linking this package)
// the launcher: corl <sandboxArg> DIR MEMORY_MB PROCESSES PROGRAM ARGS...
const sandboxArg = "__corl_checker_sandbox"

// sandboxPath is the checker's PATH.
const sandboxPath = "/usr/local/bin:/usr/bin:/bin"

// lookPath finds a program as the sandbox will: a bare name on
// sandboxPath (not on corl's own PATH, which may hold directories the
// checker's user cannot enter), a path as given, made absolute (the
// checker runs in another directory).
func lookPath(prog string) (string, error) {
	if strings.Contains(prog, "/") {
		abs, err := filepath.Abs(prog)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", err
		}
		return abs, nil
	}
	for _, d := range filepath.SplitList(sandboxPath) {
		p := filepath.Join(d, prog)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found on the checker's PATH (%s); name it by its path", sandboxPath)
}

// Validate checks the spec (the program must exist).
func (s Spec) Validate() error {
	if len(s.Command) == 0 || s.Command[0] == "" {
		return errors.New("checker.command: the program to run is required")
	}
	if _, err := lookPath(s.Command[0]); err != nil {
		return fmt.Errorf("checker.command: %s: %w", s.Command[0], err)
	}
	if s.Timeout < 0 || s.MemoryMB < 0 || s.Processes < 0 {
		return errors.New("checker: timeout, memory_mb and processes must not be negative")
	}
	return nil
}

// Key is a hash of the checker and the rows: the cache key of a batch's
// verdicts, so that a retried activity does not run the program again.
func Key(s Spec, items []Item) string {
	h := sha256.New()
	json.NewEncoder(h).Encode(struct {
		Command []string
		Items   []Item
	}{s.Command, items})
	return hex.EncodeToString(h.Sum(nil))
}

// Run runs the checker on items in its sandbox and returns one verdict per
// item. Its errors name the program and, where one is to blame, the row.
func Run(ctx context.Context, s Spec, items []Item) ([]Verdict, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	timeout := s.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	mem, procs := s.MemoryMB, s.Processes
	if mem == 0 {
		mem = 1024
	}
	if procs == 0 {
		procs = 32
	}
	prog, err := lookPath(s.Command[0])
	if err != nil {
		return nil, fmt.Errorf("checker %s: %w", s.name(), err)
	}
	dir, err := os.MkdirTemp("", "corl-checker-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for i, it := range items {
		if err := enc.Encode(struct {
			ID int `json:"id"`
			Item
		}{i, it}); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("checker %s: cannot find corl's own binary for the sandbox: %w", s.name(), err)
	}
	args := append([]string{sandboxArg, dir, fmt.Sprint(mem), fmt.Sprint(procs), prog}, s.Command[1:]...)
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + sandboxPath, "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8"}
	cmd.Stdin = &in
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &limited{w: &stderr, n: 8 << 10}
	if cmd.SysProcAttr, err = isolation(dir); err != nil {
		return nil, fmt.Errorf("checker %s: %w", s.name(), err)
	}
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("checker %s: did not answer %d rows within %s (killed): %w%s", s.name(), len(items), timeout, ErrTimeout, tail(stderr.String()))
	}
	if runErr != nil {
		return nil, fmt.Errorf("checker %s: %v%s", s.name(), runErr, tail(stderr.String()))
	}
	return parse(s, items, out.Bytes(), stderr.String())
}

// parse reads the program's output: one verdict per row, in order.
func parse(s Spec, items []Item, out []byte, stderr string) ([]Verdict, error) {
	verdicts := make([]Verdict, 0, len(items))
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		row := len(verdicts)
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(text), &raw); err != nil {
			return nil, fmt.Errorf("checker %s: line %d of its output is not a JSON object (%.80q): %v%s", s.name(), line, text, err, tail(stderr))
		}
		if row >= len(items) {
			return nil, fmt.Errorf("checker %s: answered more rows than the %d it was given (line %d)", s.name(), len(items), line)
		}
		var v Verdict
		if id, ok := raw["id"]; ok {
			var n int
			if json.Unmarshal(id, &n) != nil || n != row {
				return nil, fmt.Errorf("checker %s: line %d answers id %s, want %d (rows are answered in order)", s.name(), line, id, row)
			}
		}
		if k, ok := raw["answer_key"]; ok {
			v.HasKey = true
			if string(k) != "null" {
				var key string
				if err := json.Unmarshal(k, &key); err != nil {
					return nil, fmt.Errorf("checker %s: row %d (prompt %.60q): answer_key %s is not a string or null", s.name(), row, items[row].Prompt, k)
				}
				v.AnswerKey = &key
			}
		}
		if c, ok := raw["correct"]; ok {
			var b bool
			if err := json.Unmarshal(c, &b); err != nil {
				return nil, fmt.Errorf("checker %s: row %d (prompt %.60q): correct %s is not true or false", s.name(), row, items[row].Prompt, c)
			}
			v.Correct = &b
		}
		if !v.HasKey && v.Correct == nil {
			return nil, fmt.Errorf("checker %s: row %d (prompt %.60q): neither answer_key nor correct in %.80q", s.name(), row, items[row].Prompt, text)
		}
		verdicts = append(verdicts, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("checker %s: reading its output: %w", s.name(), err)
	}
	if len(verdicts) != len(items) {
		return nil, fmt.Errorf("checker %s: answered %d of %d rows; the first unanswered is row %d (prompt %.60q)%s",
			s.name(), len(verdicts), len(items), len(verdicts), items[len(verdicts)].Prompt, tail(stderr))
	}
	return verdicts, nil
}

func tail(stderr string) string {
	stderr = strings.TrimSpace(stderr)
	if stderr == "" {
		return ""
	}
	if len(stderr) > 600 {
		stderr = "..." + stderr[len(stderr)-600:]
	}
	return "; its stderr: " + stderr
}

// limited keeps the first n bytes written to it.
type limited struct {
	w *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
