package datasets

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadJSONLFieldsAndTemplate(t *testing.T) {
	p := writeFile(t, "d.jsonl", `{"question": "1+1?", "answer": "2"}

{"question": "half of 1?", "solution": "It is \\boxed{\\frac{1}{2}}."}
{"question": "3*3?", "answer": 9, "id": "q3"}
`)
	ds, err := Load(p, LoadOptions{Template: "Q: {prompt}\nA:"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Prompts) != 3 || ds.Prompts[0].Text != "Q: 1+1?\nA:" || ds.Prompts[2].ID != "q3" {
		t.Fatalf("prompts = %+v", ds.Prompts)
	}
	if a, _ := ds.Labels.Answer(1); a != `\frac{1}{2}` {
		t.Fatalf("solution field reduced to %q, want the boxed answer", a)
	}
	if a, _ := ds.Labels.Answer(2); a != "9" {
		t.Fatalf("numeric answer = %q", a)
	}
	if ds.Prompts[1].ID != "d.jsonl:3" {
		t.Fatalf("id of line 3 = %q (blank line 2 still counts as a line)", ds.Prompts[1].ID)
	}
}

func TestLoadJSONLReportsBadRowsWithLines(t *testing.T) {
	p := writeFile(t, "bad.jsonl", "{\"prompt\": \"ok\", \"answer\": \"1\"}\n"+
		"{\"prompt\": \"no answer\"}\n"+
		"not json\n"+
		"{\"answer\": \"3\"}\n"+
		"{\"prompt\": \"\xff\xfe\", \"answer\": \"1\"}\n"+
		"{\"prompt\": [1,2], \"answer\": \"1\"}\n"+
		"{\"prompt\": \""+strings.Repeat("x", MaxPromptBytes+1)+"\", \"answer\": \"1\"}\n"+
		"{\"prompt\": 5, \"answer\": \"1\"}\n"+
		"{\"prompt\": \"empty answer\", \"answer\": \" \"}\n")
	_, err := Load(p, LoadOptions{RequireAnswer: true})
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v, want a LoadError", err)
	}
	want := map[int]string{2: "missing answer", 3: "invalid JSON", 4: "missing prompt", 5: "UTF-8", 6: "want a string", 7: "bytes; at most 65536",
		8: `field "prompt" is the number 5, want the prompt's text`, 9: `field "answer" is empty`}
	if len(le.Rows) != len(want) {
		t.Fatalf("reported %d rows, want %d:\n%v", len(le.Rows), len(want), err)
	}
	for _, r := range le.Rows {
		if !strings.Contains(r.Err, want[r.Line]) {
			t.Errorf("line %d: %q, want it to mention %q", r.Line, r.Err, want[r.Line])
		}
		if !strings.Contains(r.Error(), "bad.jsonl:line ") {
			t.Errorf("row error %q does not name file and line", r.Error())
		}
	}
	// Told to skip, it keeps the good row and says what it dropped.
	ds, err := Load(p, LoadOptions{RequireAnswer: true, SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Prompts) != 1 || len(ds.Skipped) != 8 {
		t.Fatalf("kept %d, skipped %d; want 1 and 6", len(ds.Prompts), len(ds.Skipped))
	}
}

func TestLoadRefusesEmptyAndUnknown(t *testing.T) {
	if _, err := Load(writeFile(t, "e.jsonl", "\n\n"), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "no usable rows") {
		t.Fatalf("empty file: err = %v", err)
	}
	if _, err := Load(writeFile(t, "x.csv", "a,b"), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Fatalf("csv: err = %v", err)
	}
	if _, err := Load(writeFile(t, "d.jsonl", `{"prompt":"a"}`), LoadOptions{Template: "no placeholder"}); err == nil || !strings.Contains(err.Error(), "{prompt}") {
		t.Fatalf("template: err = %v", err)
	}
	if _, err := Load(writeFile(t, "bad.parquet", "not parquet at all"), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "Parquet") {
		t.Fatalf("bad parquet: err = %v", err)
	}
}

func TestJSONLAndParquetRoundTrip(t *testing.T) {
	task, _ := LookupTask("word")
	s, err := task.Split(5, SplitSizes{Eval: 40})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var jb, pb bytes.Buffer
	if err := WriteJSONL(&jb, s.Eval); err != nil {
		t.Fatal(err)
	}
	if err := WriteParquet(&pb, s.Eval); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"set.jsonl": jb.Bytes(), "set.parquet": pb.Bytes()} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ds, err := Load(p, LoadOptions{RequireAnswer: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ds.Prompts) != len(s.Eval) {
			t.Fatalf("%s: %d rows, want %d", name, len(ds.Prompts), len(s.Eval))
		}
		for i, p := range s.Eval {
			a, _ := ds.Labels.Answer(i)
			if ds.Prompts[i].Text != p.Prompt || a != p.Answer || ds.Prompts[i].ID != p.ID {
				t.Fatalf("%s row %d: got (%q, %q, %q), want (%q, %q, %q)", name, i, ds.Prompts[i].ID, ds.Prompts[i].Text, a, p.ID, p.Prompt, p.Answer)
			}
		}
	}
}

func TestParquetMissingFieldNamesRow(t *testing.T) {
	task, _ := LookupTask("seq")
	s, _ := task.Split(5, SplitSizes{Eval: 3})
	var pb bytes.Buffer
	if err := WriteParquet(&pb, s.Eval); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "s.parquet")
	os.WriteFile(p, pb.Bytes(), 0o644)
	_, err := Load(p, LoadOptions{PromptField: "question"})
	if err == nil || !strings.Contains(err.Error(), "s.parquet:row 1") || !strings.Contains(err.Error(), "question") {
		t.Fatalf("err = %v, want row 1 and the field name", err)
	}
}
