package datasets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
)

// Prompt is what label-free training sees of a row: no answer.
type Prompt struct {
	ID   string `json:"id"`
	Text string `json:"prompt"`
}

// Labels holds a data set's answers, row-aligned with its prompts. It is
// handed to evaluation and diagnostics only, never to a label-free reward.
type Labels struct{ answers []string }

// Answer returns row i's answer and whether the row has one.
func (l Labels) Answer(i int) (string, bool) {
	if i < 0 || i >= len(l.answers) || l.answers[i] == "" {
		return "", false
	}
	return l.answers[i], true
}

// Present lists the answers the rows have, in row order (rows without one
// left out).
func (l Labels) Present() []string {
	var out []string
	for _, a := range l.answers {
		if a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Dataset is a loaded user data set.
type Dataset struct {
	Name    string
	Prompts []Prompt
	Labels  Labels
	// Solutions are the rows' worked solutions (LoadOptions.SolutionField;
	// "" where a row has none), for pretraining.
	Solutions []string
	Skipped   []RowError // rows dropped because LoadOptions.SkipBad was set
}

// MaxPromptBytes bounds one prompt: far past any context corl's models
// have, small enough that a stray huge row fails at load, with its line,
// instead of exhausting memory mid-run.
const MaxPromptBytes = 64 << 10

// LoadOptions says how to read a user file.
type LoadOptions struct {
	// PromptField names the prompt column; empty tries prompt, question, problem.
	PromptField string
	// AnswerField names the answer column; empty tries answer, solution. A
	// column named solution (or any answer holding \boxed{}) is reduced to its
	// final answer with Extract.
	AnswerField string
	// SolutionField names a worked-solution column (read into
	// Dataset.Solutions); empty reads none.
	SolutionField string
	// RequireAnswer makes a row without an answer an error (evaluation sets).
	RequireAnswer bool
	// Template, if set, wraps each prompt; it must contain {prompt}.
	Template string
	// SkipBad drops bad rows (recorded in Dataset.Skipped) instead of failing.
	SkipBad bool
}

// RowError is one bad row, located by file and line (JSONL) or row (Parquet).
type RowError struct {
	File string
	Line int // 1-based line or row number
	Unit string
	Err  string
}

func (e RowError) Error() string { return fmt.Sprintf("%s:%s %d: %s", e.File, e.Unit, e.Line, e.Err) }

// LoadError reports every bad row of a file (the first maxReported of them).
type LoadError struct {
	File string
	Rows []RowError
	More int // bad rows not listed
}

const maxReported = 50

func (e *LoadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d bad row(s)", e.File, len(e.Rows)+e.More)
	for _, r := range e.Rows {
		b.WriteString("\n  " + r.Error())
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "\n  ... and %d more", e.More)
	}
	return b.String()
}

var (
	promptFields = []string{"prompt", "question", "problem"}
	answerFields = []string{"answer", "solution"}
)

// Load reads a JSONL (.jsonl, .json lines) or Parquet (.parquet) file.
func Load(path string, o LoadOptions) (*Dataset, error) {
	if o.Template != "" && !strings.Contains(o.Template, "{prompt}") {
		return nil, fmt.Errorf("template %q: must contain {prompt}", o.Template)
	}
	var rows []rawRow
	var err error
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".jsonl", ".ndjson", ".json":
		rows, err = readJSONL(path)
	case ".parquet":
		rows, err = readParquet(path)
	default:
		return nil, fmt.Errorf("%s: unknown format %q (want .jsonl or .parquet)", path, ext)
	}
	if err != nil {
		return nil, err
	}
	return build(path, rows, o)
}

// rawRow is one record before field selection.
type rawRow struct {
	line   int
	unit   string // "line" or "row"
	fields map[string]any
	err    string // a parse error for this row
}

func readJSONL(path string) ([]rawRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open data file: %w", err)
	}
	defer f.Close()
	var rows []rawRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue // blank lines separate nothing and are not rows
		}
		r := rawRow{line: line, unit: "line"}
		if !utf8.Valid(text) {
			r.err = "not valid UTF-8"
		} else if err := json.Unmarshal(text, &r.fields); err != nil {
			r.err = "invalid JSON: " + err.Error()
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:line %d: read: %w", path, line+1, err)
	}
	return rows, nil
}

func readParquet(path string) ([]rawRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open data file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable Parquet file: %w", path, err)
	}
	rd := parquet.NewReader(pf)
	defer rd.Close()
	var rows []rawRow
	for i := 1; ; i++ {
		m := map[string]any{}
		if err := rd.Read(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return rows, nil
			}
			return nil, fmt.Errorf("%s:row %d: %w", path, i, err)
		}
		rows = append(rows, rawRow{line: i, unit: "row", fields: m})
	}
}

// field returns the string value of the first present name.
func field(m map[string]any, names []string) (name string, val string, present bool, err error) {
	for _, n := range names {
		v, ok := m[n]
		if !ok || v == nil {
			continue
		}
		switch x := v.(type) {
		case string:
			return n, x, true, nil
		case []byte:
			return n, string(x), true, nil
		case float64, int64, int32, int, float32, json.Number:
			return n, fmt.Sprint(x), true, nil
		default:
			return n, "", true, fmt.Errorf("field %q has type %T, want a string", n, v)
		}
	}
	return "", "", false, nil
}

// isText reports whether a field's value is text (a number is an answer's
// fine form, never a prompt's).
func isText(v any) bool {
	switch v.(type) {
	case string, []byte:
		return true
	}
	return false
}

func build(path string, rows []rawRow, o LoadOptions) (*Dataset, error) {
	pNames, aNames := promptFields, answerFields
	if o.PromptField != "" {
		pNames = []string{o.PromptField}
	}
	if o.AnswerField != "" {
		aNames = []string{o.AnswerField}
	}
	ds := &Dataset{Name: filepath.Base(path)}
	var bad []RowError
	for _, r := range rows {
		fail := func(msg string) { bad = append(bad, RowError{File: path, Line: r.line, Unit: r.unit, Err: msg}) }
		if r.err != "" {
			fail(r.err)
			continue
		}
		pName, prompt, ok, err := field(r.fields, pNames)
		switch {
		case err != nil:
			fail(err.Error())
			continue
		case ok && !isText(r.fields[pName]):
			fail(fmt.Sprintf("field %q is the number %s, want the prompt's text", pName, prompt))
			continue
		case !ok:
			fail(fmt.Sprintf("missing prompt field (looked for %s)", strings.Join(pNames, ", ")))
			continue
		case strings.TrimSpace(prompt) == "":
			fail("empty prompt")
			continue
		case len(prompt) > MaxPromptBytes:
			fail(fmt.Sprintf("prompt is %d bytes; at most %d (no model here has a context near that)", len(prompt), MaxPromptBytes))
			continue
		case !utf8.ValidString(prompt):
			fail("prompt is not valid UTF-8")
			continue
		}
		aName, answer, ok, err := field(r.fields, aNames)
		if err != nil {
			fail(err.Error())
			continue
		}
		if ok && !utf8.ValidString(answer) {
			fail("answer is not valid UTF-8")
			continue
		}
		if ok && (aName == "solution" || strings.Contains(answer, `\boxed`)) {
			ext, found := Extract(answer)
			if !found {
				fail(fmt.Sprintf("field %q has no final answer to extract", aName))
				continue
			}
			answer = ext
		}
		solution := ""
		if o.SolutionField != "" {
			_, sol, _, err := field(r.fields, []string{o.SolutionField})
			if err != nil {
				fail(err.Error())
				continue
			}
			solution = strings.TrimSpace(sol)
		}
		if o.RequireAnswer && strings.TrimSpace(answer) == "" {
			if ok {
				fail(fmt.Sprintf("field %q is empty: no answer to check against", aName))
			} else {
				fail(fmt.Sprintf("missing answer field (looked for %s)", strings.Join(aNames, ", ")))
			}
			continue
		}
		if o.Template != "" {
			prompt = strings.ReplaceAll(o.Template, "{prompt}", prompt)
		}
		id := fmt.Sprintf("%s:%d", ds.Name, r.line)
		if v, ok := r.fields["id"]; ok && v != nil {
			id = fmt.Sprint(v)
		}
		ds.Prompts = append(ds.Prompts, Prompt{ID: id, Text: prompt})
		ds.Labels.answers = append(ds.Labels.answers, strings.TrimSpace(answer))
		ds.Solutions = append(ds.Solutions, solution)
	}
	if len(bad) > 0 && !o.SkipBad {
		le := &LoadError{File: path, Rows: bad}
		if len(bad) > maxReported {
			le.Rows, le.More = bad[:maxReported], len(bad)-maxReported
		}
		return nil, le
	}
	ds.Skipped = bad
	if len(ds.Prompts) == 0 {
		return nil, fmt.Errorf("%s: no usable rows (%d skipped)", path, len(bad))
	}
	return ds, nil
}

// parquetRow is the layout WriteParquet uses.
type parquetRow struct {
	ID       string `parquet:"id"`
	Task     string `parquet:"task"`
	Level    int32  `parquet:"level"`
	Prompt   string `parquet:"prompt"`
	Answer   string `parquet:"answer"`
	Solution string `parquet:"solution_text"`
}

// WriteJSONL writes problems one JSON object per line.
func WriteJSONL(w io.Writer, set []Problem) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, p := range set {
		if err := enc.Encode(p); err != nil {
			return err
		}
	}
	return nil
}

// WriteParquet writes problems as a Parquet file with columns id, task,
// level, prompt, answer, solution_text.
func WriteParquet(w io.Writer, set []Problem) error {
	pw := parquet.NewGenericWriter[parquetRow](w)
	rows := make([]parquetRow, len(set))
	for i, p := range set {
		rows[i] = parquetRow{ID: p.ID, Task: p.Task, Level: int32(p.Level), Prompt: p.Prompt, Answer: p.Answer, Solution: p.Solution}
	}
	if _, err := pw.Write(rows); err != nil {
		return err
	}
	return pw.Close()
}
