package report

import (
	"fmt"
	"strings"

	"github.com/corl-project/corl/stats"
)

// Contrast is one planned comparison of a table's methods: Name, and A and
// B, each naming one row by the end of its method label (else by a
// substring only that row has).
type Contrast struct {
	Name, A, B string
}

// ParseContrast reads "NAME|A|B".
func ParseContrast(s string) (Contrast, error) {
	f := strings.Split(s, "|")
	if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
		return Contrast{}, fmt.Errorf("contrast %q: want NAME|A|B (A and B the ends of two rows' method labels)", s)
	}
	return Contrast{f[0], f[1], f[2]}, nil
}

// PlannedRow is a planned contrast's result: A - B on the same problems
// (the table's crossed interval), p raw, Holm over the table's every test
// (PHolm, the correction a plan written for the whole table takes), Holm
// over the planned contrasts alone (PPlanned), and the minimum detectable
// difference.
type PlannedRow struct {
	Name     string         `json:"name"`
	A        string         `json:"a"`
	B        string         `json:"b"`
	Diff     stats.Interval `json:"diff"`
	P        float64        `json:"p"`
	PHolm    float64        `json:"p_holm"`
	PPlanned float64        `json:"p_holm_planned"`
	MDD      float64        `json:"min_detectable"`
	// MDDPlanned is the MDD at the planned family's corrected level,
	// 5% / (number of planned contrasts): what a contrast can show once
	// it is corrected for the others.
	MDDPlanned float64 `json:"min_detectable_planned"`
	SE         float64 `json:"se,omitempty"` // of Diff's mean, with DF degrees of freedom
	DF         float64 `json:"df,omitempty"`
	// Margin and PEquivalent, set by Equivalence: the p of two one-sided
	// tests that the difference lies within +-Margin (stats.TOST).
	Margin      float64 `json:"equivalence_margin,omitempty"`
	PEquivalent float64 `json:"p_equivalent,omitempty"`
}

// Equivalence sets each row's test that its difference lies within
// +-margin (TOST), Holm-corrected over the rows like PPlanned.
func Equivalence(rows []PlannedRow, margin float64) {
	ps := make([]float64, len(rows))
	for i, r := range rows {
		ps[i] = stats.TOST(r.Diff.Mean, r.SE, r.DF, margin)
	}
	for i, p := range stats.Holm(ps) {
		rows[i].Margin, rows[i].PEquivalent = margin, p
	}
}

// Planned evaluates the contrasts on t: each is found among t's
// comparisons in either order (signs flipped for B - A).
func Planned(t Table, cs []Contrast) ([]PlannedRow, error) {
	var methods []string
	for _, r := range t.Rows {
		methods = append(methods, r.Method)
	}
	find := func(which string) (string, error) {
		var hit []string
		for _, m := range methods {
			if strings.HasSuffix(m, which) {
				hit = append(hit, m)
			}
		}
		if len(hit) == 0 {
			for _, m := range methods {
				if strings.Contains(m, which) {
					hit = append(hit, m)
				}
			}
		}
		if len(hit) != 1 {
			return "", fmt.Errorf("%q names %d rows (%s), want one", which, len(hit), strings.Join(hit, "; "))
		}
		return hit[0], nil
	}
	var out []PlannedRow
	var ps []float64
	for _, c := range cs {
		a, err := find(c.A)
		if err != nil {
			return nil, fmt.Errorf("contrast %s: %w", c.Name, err)
		}
		b, err := find(c.B)
		if err != nil {
			return nil, fmt.Errorf("contrast %s: %w", c.Name, err)
		}
		row := PlannedRow{Name: c.Name, A: a, B: b}
		found := false
		for _, cmp := range t.Comparisons {
			if d := cmp.Diff; d != nil && (cmp.A == a && cmp.B == b || cmp.A == b && cmp.B == a) {
				row.Diff, row.P, row.PHolm, row.MDD, found = d.Diff, d.P, d.PHolm, d.MDD, true
				row.MDDPlanned = stats.MDDAt(d.SE, d.DF, 0.05/float64(len(cs)))
				row.SE, row.DF = d.SE, d.DF
				if cmp.A == b {
					row.Diff = stats.Interval{Mean: -d.Diff.Mean, Lo: -d.Diff.Hi, Hi: -d.Diff.Lo}
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("contrast %s: the table does not compare %s with %s (per-problem outcomes missing?)", c.Name, a, b)
		}
		out = append(out, row)
		ps = append(ps, row.P)
	}
	for i, p := range stats.Holm(ps) {
		out[i].PPlanned = p
	}
	return out, nil
}

// PlannedMarkdown is the planned contrasts as a Markdown table, with the
// equivalence test's column where Equivalence set one.
func PlannedMarkdown(rows []PlannedRow) string {
	var b strings.Builder
	margin := 0.0
	if len(rows) > 0 {
		margin = rows[0].Margin
	}
	b.WriteString("| contrast | A - B (seeds and problems crossed) | p | Holm (table) | Holm (planned only) | MDD (5%) | MDD (5% / planned) |")
	sep := "|---|---|---|---|---|---|---|"
	if margin > 0 {
		fmt.Fprintf(&b, " within +-%.3f (TOST, Holm) |", margin)
		sep += "---|"
	}
	b.WriteString("\n" + sep + "\n")
	p := func(x float64) string {
		if x < 0.001 {
			return "< 0.001"
		}
		return fmt.Sprintf("%.3g", x)
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %+.3f [%+.3f, %+.3f] | %s | %s | %s | %.3f | %.3f |", r.Name, r.Diff.Mean, r.Diff.Lo, r.Diff.Hi, p(r.P), p(r.PHolm), p(r.PPlanned), r.MDD, r.MDDPlanned)
		if margin > 0 {
			fmt.Fprintf(&b, " %s |", p(r.PEquivalent))
		}
		b.WriteString("\n")
	}
	return b.String()
}
