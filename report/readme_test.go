package report

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestREADMEStudyTablesMatchTheirResults: the study pages' tables
// (results/<study>/study.md, once the README's research section) of the
// composition, own-task and blind-spot studies are the committed results: each method
// row's sampled pass@1 and paired gain, as results.json holds them, stand
// on one line of the pages, and each planned-contrast line that `make
// composition-analysis` / `make own-task-analysis` wrote stands in it as
// written (the anchors' and the pooled contrasts by their intervals). A rerun that changes a number, or a page edited by hand,
// fails here.
func TestREADMEStudyTablesMatchTheirResults(t *testing.T) {
	var readme []byte
	for _, study := range []string{"composition", "own-task", "paper-table"} {
		b, err := os.ReadFile("../results/" + study + "/study.md")
		if err != nil {
			t.Fatal(err)
		}
		readme = append(readme, b...)
	}
	lines := strings.Split(string(readme), "\n")
	prose := strings.Join(strings.Fields(string(readme)), " ") // lines wrapped anywhere
	for _, dir := range []string{"composition", "own-task", "paper-table"} {
		b, err := os.ReadFile("../results/" + dir + "/results.json")
		if err != nil {
			t.Fatal(err)
		}
		var tb Table
		if err := json.Unmarshal(b, &tb); err != nil {
			t.Fatal(err)
		}
		for _, r := range tb.Rows {
			level := fmt.Sprintf("| %.3f [%.3f, %.3f] |", r.Average.Mean, r.Average.Lo, r.Average.Hi)
			gain := ""
			if g := r.Gain; g != nil {
				gain = fmt.Sprintf("%+.3f [%+.3f, %+.3f]", g.Diff.Mean, g.Diff.Lo, g.Diff.Hi)
			}
			found := false
			for _, l := range lines {
				if strings.Contains(l, level) && strings.Contains(l, gain) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("results/%s: row %q (%s gain %s) is not in its study page", dir, r.Method, level, gain)
			}
		}
	}
	// The contrast tables stand in the README as written; the anchors'
	// one contrast and the post hoc pooled ones are quoted in prose, by
	// their intervals.
	for _, f := range []string{"composition-analysis/contrasts.md", "own-task-analysis/contrasts.md", "composition-analysis/anchors.md", "composition-analysis/pooled-both.md"} {
		b, err := os.ReadFile("../results/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n")[2:] {
			want := l
			if strings.HasSuffix(f, "anchors.md") || strings.HasSuffix(f, "pooled-both.md") {
				want = strings.TrimSpace(strings.Split(l, "|")[2])
			}
			if !strings.Contains(prose, strings.Join(strings.Fields(want), " ")) {
				t.Errorf("results/%s: %q is not in its study page", f, want)
			}
		}
	}
	// The dose-response slopes quoted in the README, with their intervals.
	for _, f := range []string{"composition-analysis/natural-pairs.json", "composition-analysis/with-anchors.json", "own-task-analysis/pairs.json"} {
		b, err := os.ReadFile("../results/" + f)
		if err != nil {
			t.Fatal(err)
		}
		var tb Table
		if err := json.Unmarshal(b, &tb); err != nil {
			t.Fatal(err)
		}
		for _, d := range tb.DoseResponse {
			if d.Fit.CI == nil {
				continue
			}
			want := fmt.Sprintf("%+.3f [%+.3f, %+.3f]", d.Fit.Slope, d.Fit.CI.Lo, d.Fit.CI.Hi)
			if !strings.Contains(prose, want) {
				t.Errorf("results/%s: %s slope %s is not in its study page", f, d.Predictor, want)
			}
		}
	}
}

// TestCommittedStudiesRedraw: every committed study's report.md and
// results.json are what its records give today (`make redraw`): a change
// to the report that moves a committed number fails here until the
// studies are redrawn and their pages say so.
func TestCommittedStudiesRedraw(t *testing.T) {
	for study, member := range map[string]string{"composition": "nat-llama", "composition-anchors": "llama-odd", "own-task": "own-llama", "paper-table": "llama-odd", "diversity": "nat-llama", "per-member": "nat-llama-init2,nat-llama-order2,nat-llama-small,nat-gpt2,nat-llama-reph", "horizon": "nat-llama", "own-task-per-member": "own-llama-init2,own-llama-small,own-gpt2"} {
		dir := "../results/" + study
		runs, err := LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		runs, _ = Distinct(runs) // as corl report reads them
		tb := BuildTable(runs, member)
		md, err := os.ReadFile(dir + "/report.md")
		if err != nil {
			t.Fatal(err)
		}
		if got := tb.Markdown(); got != string(md) {
			t.Errorf("%s: report.md is not what its records give (run make redraw)", study)
		}
		js, err := os.ReadFile(dir + "/results.json")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := json.MarshalIndent(tb, "", "  "); string(got)+"\n" != string(js) {
			t.Errorf("%s: results.json is not what its records give (run make redraw)", study)
		}
	}
}
