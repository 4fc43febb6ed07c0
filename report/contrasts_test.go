package report

import (
	"math"
	"strings"
	"testing"

	"github.com/corl-project/corl/stats"
)

// TestPlannedContrasts: a planned contrast is read from the table's
// comparison in either order (B - A flips sign and interval), its rows named
// by the ends of their labels; Holm over the planned contrasts alone is
// computed among them; a name that fits no row, or two, is refused naming
// the contrast.
func TestPlannedContrasts(t *testing.T) {
	tb := Table{
		Rows: []Row{{Method: "Base"}, {Method: "Co-RL — members m + copy"}, {Method: "Co-RL — members m + peer"}, {Method: "Self-vote"}},
		Comparisons: []Comparison{
			{A: "Co-RL — members m + copy", B: "Co-RL — members m + peer", Diff: &Paired{Diff: stats.Interval{Mean: -0.02, Lo: -0.03, Hi: -0.01}, P: 0.01, PHolm: 0.05, MDD: 0.012}},
			{A: "Co-RL — members m + copy", B: "Self-vote", Diff: &Paired{Diff: stats.Interval{Mean: 0.001, Lo: -0.01, Hi: 0.012}, P: 0.9, PHolm: 1, MDD: 0.02}},
		},
	}
	rows, err := Planned(tb, []Contrast{{"peer - copy", "m + peer", "m + copy"}, {"copy - self-vote", "m + copy", "Self-vote"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; math.Abs(r.Diff.Mean-0.02) > 1e-12 || math.Abs(r.Diff.Lo-0.01) > 1e-12 || math.Abs(r.Diff.Hi-0.03) > 1e-12 || r.PHolm != 0.05 || r.MDD != 0.012 {
		t.Errorf("B - A not flipped: %+v", r)
	}
	if rows[0].PPlanned != 0.02 || rows[1].PPlanned != 0.9 { // Holm over {0.01, 0.9}: 2 x 0.01, then max(0.02, 0.9)
		t.Errorf("planned-only Holm %v %v, want 0.02 0.9", rows[0].PPlanned, rows[1].PPlanned)
	}
	md := PlannedMarkdown(rows)
	if !strings.Contains(md, "| peer - copy | +0.020 [+0.010, +0.030] | 0.01 | 0.05 | 0.02 | 0.012 |") {
		t.Errorf("markdown:\n%s", md)
	}
	// Within +-0.03 (SE 0.005, DF 100): the copy - self-vote difference
	// (0.001) is, peer - copy (0.02) is not; Holm over the two.
	rows[0].SE, rows[0].DF, rows[1].SE, rows[1].DF = 0.005, 100, 0.005, 100
	Equivalence(rows, 0.03)
	if rows[1].PEquivalent > 0.001 || rows[0].PEquivalent < 0.01 || rows[0].Margin != 0.03 {
		t.Errorf("equivalence p %v (peer - copy), %v (copy - self-vote); want large, then < 0.001", rows[0].PEquivalent, rows[1].PEquivalent)
	}
	if md := PlannedMarkdown(rows); !strings.Contains(md, "within +-0.030 (TOST, Holm) |") || !strings.Contains(md, "| < 0.001 |\n") {
		t.Errorf("markdown with equivalence:\n%s", md)
	}
	for _, c := range []Contrast{{"x", "nobody", "Self-vote"}, {"y", "Co-RL", "Self-vote"}} {
		if _, err := Planned(tb, []Contrast{c}); err == nil || !strings.Contains(err.Error(), "contrast "+c.Name) {
			t.Errorf("contrast %+v: %v", c, err)
		}
	}
	if _, err := ParseContrast("a|b"); err == nil {
		t.Error("a contrast without B was accepted")
	}
}

// TestPooledContrast: "p1; p2|copy" is the mean of two peers' final
// outcomes minus the copy's on the same problems, with the crossed
// variance of the three arms (stats.Combination), marked pooled (no Holm
// over the table); a row without per-problem outcomes, or scored on other
// problems, is refused by name.
func TestPooledContrast(t *testing.T) {
	copyTo := [][]float64{{0, 1, 0, 1, 0, 0}, {0, 0, 1, 1, 0, 0}}
	p1 := [][]float64{{1, 1, 0, 1, 0, 1}, {0, 1, 1, 1, 0, 0}}
	p2 := [][]float64{{1, 1, 1, 1, 0, 0}, {0, 1, 1, 1, 1, 1}, {1, 0, 1, 1, 0, 0}}
	tb := Table{
		Rows: []Row{{Method: "Co-RL — m + copy"}, {Method: "Co-RL — m + p1"}, {Method: "Co-RL — m + p2"}, {Method: "Co-RL — m + p3"}, {Method: "Co-RL — m + p4"}},
		finals: []final{{method: "Co-RL — m + copy", to: copyTo}, {method: "Co-RL — m + p1", to: p1}, {method: "Co-RL — m + p2", to: p2},
			{method: "Co-RL — m + p3"}, {method: "Co-RL — m + p4", to: [][]float64{{1, 0}}}},
	}
	rows, err := Planned(tb, []Contrast{{"peers - copy", "m + p1; m + p2", "m + copy"}})
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	// Means: copy 4/12, p1 7/12, p2 12/18 = 2/3: (7/12 + 2/3) / 2 - 1/3.
	if want := (7.0/12+2.0/3)/2 - 1.0/3; math.Abs(r.Diff.Mean-want) > 1e-12 {
		t.Errorf("pooled difference %v, want %v", r.Diff.Mean, want)
	}
	want := stats.Combination([]stats.Arm{{Weight: 0.5, Outcomes: p1}, {Weight: 0.5, Outcomes: p2}, {Weight: -1, Outcomes: copyTo}})
	if r.Diff != want.Interval || r.P != want.P || r.SE != want.SE || !r.Pooled || r.A != "Co-RL — m + p1; Co-RL — m + p2" {
		t.Errorf("pooled row %+v, want the combination %+v", r, want)
	}
	if md := PlannedMarkdown(rows); !strings.Contains(md, "| — (pooled) |") {
		t.Errorf("markdown:\n%s", md)
	}
	for _, c := range []struct{ side, want string }{{"m + p1; m + p3", "m + p3 has no final outcomes"}, {"m + p1; m + p4", "scored on 2 problems"}} {
		if _, err := Planned(tb, []Contrast{{"bad", c.side, "m + copy"}}); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "contrast bad") {
			t.Errorf("%s: %v, want an error saying %q", c.side, err, c.want)
		}
	}
	if _, err := ParseContrast("x|a;;b|c"); err == nil {
		t.Error("a contrast with an empty row name was accepted")
	}
}

// TestPairedSeeds: with Options.PairedSeeds two methods run on the same
// seeds are compared seed by seed (rows matched by seed, whatever order
// the runs came in), the comparison says so, and a pooled contrast pairs
// its arms the same way; methods on other seeds stay unpaired.
func TestPairedSeeds(t *testing.T) {
	fa := final{method: "A", to: [][]float64{{1, 0, 1}, {0, 0, 1}, {1, 1, 1}}, seeds: []uint64{1, 2, 3}}
	fb := final{method: "B", to: [][]float64{{1, 1, 1}, {1, 0, 1}, {0, 0, 1}}, seeds: []uint64{3, 1, 2}}
	fc := final{method: "C", to: [][]float64{{0, 0, 1}, {1, 0, 0}}, seeds: []uint64{1, 2}}
	for _, f := range []*final{&fa, &fb, &fc} {
		f.gTo = f.to
	}
	cs := compareAll([]final{fa, fb, fc}, true)
	if len(cs) != 3 || !cs[0].PairedSeeds || cs[1].PairedSeeds || cs[2].PairedSeeds {
		t.Fatalf("comparisons %+v: want A-B paired, A-C and B-C not", cs)
	}
	bAligned := [][]float64{{1, 0, 1}, {0, 0, 1}, {1, 1, 1}} // B's rows for seeds 1, 2, 3: B equals A seed by seed
	if want := crossed(bAligned, fa.to, true); cs[0].Diff.Diff != want.Diff || cs[0].Diff.Diff.Mean != 0 || cs[0].Diff.SE != 0 {
		t.Errorf("A - B paired %+v, want %+v (no difference at all, seed by seed)", cs[0].Diff, want)
	}
	if u := compareAll([]final{fa, fb}, false)[0]; u.PairedSeeds || u.Diff.SE == 0 {
		t.Errorf("unpaired A - B %+v: want the seeds' variance in it", u.Diff)
	}
	tb := Table{Rows: []Row{{Method: "A"}, {Method: "B"}, {Method: "C"}}, finals: []final{fa, fb, fc}, PairedSeeds: true}
	rows, err := Planned(tb, []Contrast{{"pooled", "A; B", "A"}})
	if err != nil {
		t.Fatal(err)
	}
	want := stats.CombinationPaired([]stats.Arm{{Weight: 0.5, Outcomes: fa.to}, {Weight: 0.5, Outcomes: bAligned}, {Weight: -1, Outcomes: fa.to}})
	if rows[0].Diff != want.Interval || rows[0].SE != want.SE {
		t.Errorf("paired pooled contrast %+v, want %+v", rows[0], want)
	}
}
