package datasets

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileSetsPartitionTheRows: every row is in exactly one set, the
// shares are near 65/5/20/3/7, a prompt repeated (with other spacing) stays
// in one set, and the membership depends on the seed.
func TestFileSetsPartitionTheRows(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 4000; i++ {
		fmt.Fprintf(&b, `{"prompt": "What is %d plus %d?", "answer": "%d"}`+"\n", i, i%17, i+i%17)
	}
	b.WriteString(`{"prompt": "What is  0 plus   0?", "answer": "0"}` + "\n") // row 1's prompt, spaced differently
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	want := []float64{0.65, 0.05, 0.20, 0.03, 0.07}
	for set := range SetNames {
		rows := FileSet(ds, 1, set)
		share := float64(len(rows)) / float64(len(ds.Prompts))
		if share < want[set]-0.025 || share > want[set]+0.025 {
			t.Errorf("%s: %.3f of rows, want about %.2f", SetNames[set], share, want[set])
		}
		for _, p := range rows {
			seen[p.ID]++
		}
	}
	if len(seen) != len(ds.Prompts) {
		t.Errorf("%d rows in some set, of %d", len(seen), len(ds.Prompts))
	}
	setOf := func(seed uint64, id string) int {
		for set := range SetNames {
			for _, p := range FileSet(ds, seed, set) {
				if p.ID == id {
					return set
				}
			}
		}
		return -1
	}
	if a, b := setOf(1, "rows.jsonl:1"), setOf(1, "rows.jsonl:4001"); a != b {
		t.Errorf("one prompt in two sets: %s and %s", SetNames[a], SetNames[b])
	}
	moved := 0
	for i := 1; i <= 200; i++ {
		id := fmt.Sprintf("rows.jsonl:%d", i)
		if setOf(1, id) != setOf(2, id) {
			moved++
		}
	}
	if moved == 0 {
		t.Error("the split does not depend on the seed")
	}
}

func TestCompletionText(t *testing.T) {
	for _, tc := range []struct{ sol, answer, want string }{
		{"", "Paris", "The answer is Paris."},
		{"France's capital is Paris.", "Paris", "France's capital is Paris. The answer is Paris."},
		{"2+2=4. The answer is 4.", "4", "2+2=4. The answer is 4."},
		{`so \boxed{4}`, "4", `so \boxed{4}`},
	} {
		if got := CompletionText(Problem{Solution: tc.sol, Answer: tc.answer}); got != tc.want {
			t.Errorf("CompletionText(%q, %q) = %q, want %q", tc.sol, tc.answer, got, tc.want)
		}
	}
}
