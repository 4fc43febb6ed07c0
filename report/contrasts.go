package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/corl-project/corl/stats"
)

// Contrast is one planned comparison of a table's methods: Name, and A and
// B, each naming one row by the end of its method label (else by a
// substring only that row has). A side naming several rows, separated by
// ";", is their mean: "p1; p2; p3" minus "copy" is a pooled contrast
// (stats.Combination) of three peers against one control.
type Contrast struct {
	Name, A, B string
}

// ParseContrast reads "NAME|A|B".
func ParseContrast(s string) (Contrast, error) {
	f := strings.Split(s, "|")
	if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
		return Contrast{}, fmt.Errorf("contrast %q: want NAME|A|B (A and B the ends of rows' method labels; several rows separated by ';' are their mean)", s)
	}
	for _, side := range f[1:] {
		for _, which := range strings.Split(side, ";") {
			if strings.TrimSpace(which) == "" {
				return Contrast{}, fmt.Errorf("contrast %q: an empty row name in %q", s, side)
			}
		}
	}
	return Contrast{f[0], f[1], f[2]}, nil
}

// rowsOf is the side of a contrast as row names.
func rowsOf(side string) []string {
	var out []string
	for _, which := range strings.Split(side, ";") {
		out = append(out, strings.TrimSpace(which))
	}
	return out
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
	// Pooled marks a contrast of several rows' mean (stats.Combination),
	// which is none of the table's tests: it has no PHolm.
	Pooled bool `json:"pooled,omitempty"`
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

// Planned evaluates the contrasts on t: one row against another is found
// among t's comparisons in either order (signs flipped for B - A); a side
// of several rows is pooled from their final outcomes (Table.pooled).
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
		as, bs := rowsOf(c.A), rowsOf(c.B)
		var a, b []string
		for _, side := range []struct {
			names []string
			into  *[]string
		}{{as, &a}, {bs, &b}} {
			for _, which := range side.names {
				m, err := find(which)
				if err != nil {
					return nil, fmt.Errorf("contrast %s: %w", c.Name, err)
				}
				*side.into = append(*side.into, m)
			}
		}
		var row PlannedRow
		var err error
		if len(a) == 1 && len(b) == 1 {
			row, err = t.compared(a[0], b[0])
		} else {
			row, err = t.pooled(a, b)
		}
		if err != nil {
			return nil, fmt.Errorf("contrast %s: %w", c.Name, err)
		}
		row.Name = c.Name
		row.MDDPlanned = stats.MDDAt(row.SE, row.DF, 0.05/float64(len(cs)))
		out = append(out, row)
		ps = append(ps, row.P)
	}
	for i, p := range stats.Holm(ps) {
		out[i].PPlanned = p
	}
	return out, nil
}

// compared is A - B as the table compared them, in either order.
func (t Table) compared(a, b string) (PlannedRow, error) {
	row := PlannedRow{A: a, B: b}
	for _, cmp := range t.Comparisons {
		if d := cmp.Diff; d != nil && (cmp.A == a && cmp.B == b || cmp.A == b && cmp.B == a) {
			row.Diff, row.P, row.PHolm, row.MDD = d.Diff, d.P, d.PHolm, d.MDD
			row.SE, row.DF = d.SE, d.DF
			if cmp.A == b {
				row.Diff = stats.Interval{Mean: -d.Diff.Mean, Lo: -d.Diff.Hi, Hi: -d.Diff.Lo}
			}
			return row, nil
		}
	}
	return row, fmt.Errorf("the table does not compare %s with %s (per-problem outcomes missing?)", a, b)
}

// pooled is the mean of rows a minus the mean of rows b on the same
// problems, from their final outcomes per seed and problem (a row named
// on both sides counts on both).
func (t Table) pooled(a, b []string) (PlannedRow, error) {
	row := PlannedRow{A: strings.Join(a, "; "), B: strings.Join(b, "; "), Pooled: true}
	var arms []stats.Arm
	np := -1
	for _, side := range []struct {
		names []string
		sign  float64
	}{{a, 1}, {b, -1}} {
		for _, m := range side.names {
			i := slices.IndexFunc(t.finals, func(f final) bool { return f.method == m })
			if i < 0 || t.finals[i].to == nil {
				return row, fmt.Errorf("%s has no final outcomes per problem to pool", m)
			}
			x := t.finals[i].to
			if np >= 0 && len(x[0]) != np {
				return row, fmt.Errorf("%s was scored on %d problems, the others on %d: a pooled contrast needs the same problems", m, len(x[0]), np)
			}
			np = len(x[0])
			arms = append(arms, stats.Arm{Weight: side.sign / float64(len(side.names)), Outcomes: x})
		}
	}
	c := stats.Combination(arms)
	if t.PairedSeeds {
		if paired, ok := t.bySeeds(a, b, arms); ok {
			c = stats.CombinationPaired(paired)
		}
	}
	row.Diff, row.P, row.MDD, row.SE, row.DF = c.Interval, c.P, c.MDD, c.SE, c.DF
	return row, nil
}

// bySeeds is arms (the rows a then b, as pooled builds them) with every
// arm's seeds in the first arm's order, or false when the rows did not all
// run the same seeds, or only one.
func (t Table) bySeeds(a, b []string, arms []stats.Arm) ([]stats.Arm, bool) {
	var fs []final
	for _, m := range append(append([]string(nil), a...), b...) {
		fs = append(fs, t.finals[slices.IndexFunc(t.finals, func(f final) bool { return f.method == m })])
	}
	if len(fs[0].seeds) < 2 {
		return nil, false
	}
	out := make([]stats.Arm, len(arms))
	for i, f := range fs {
		x := f.bySeed(f.to, fs[0].seeds)
		if x == nil {
			return nil, false
		}
		out[i] = stats.Arm{Weight: arms[i].Weight, Outcomes: x}
	}
	return out, true
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
		holm := p(r.PHolm)
		if r.Pooled {
			holm = "— (pooled)"
		}
		fmt.Fprintf(&b, "| %s | %+.3f [%+.3f, %+.3f] | %s | %s | %s | %.3f | %.3f |", r.Name, r.Diff.Mean, r.Diff.Lo, r.Diff.Hi, p(r.P), holm, p(r.PPlanned), r.MDD, r.MDDPlanned)
		if margin > 0 {
			fmt.Fprintf(&b, " %s |", p(r.PEquivalent))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// PoolStudies is the weighted sum of one contrast from each of several
// independent studies (their own runs and problems; stats.Pool): with
// weights summing to 1, the contrast's weighted mean over the studies.
// Each row needs its SE and degrees of freedom (those Planned sets).
func PoolStudies(name string, rows []PlannedRow, weights []float64) (PlannedRow, error) {
	if len(rows) != len(weights) || len(rows) == 0 {
		return PlannedRow{}, fmt.Errorf("pool %s: %d contrasts and %d weights", name, len(rows), len(weights))
	}
	cs := make([]stats.Crossed, len(rows))
	var as, bs []string
	for i, r := range rows {
		if r.DF == 0 {
			return PlannedRow{}, fmt.Errorf("pool %s: contrast %s has no standard error and degrees of freedom (written before they were kept?)", name, r.Name)
		}
		cs[i] = stats.Crossed{Interval: r.Diff, SE: r.SE, DF: r.DF}
		as, bs = append(as, r.A), append(bs, r.B)
	}
	c := stats.Pool(cs, weights)
	return PlannedRow{Name: name, A: strings.Join(as, " | "), B: strings.Join(bs, " | "), Diff: c.Interval, P: c.P, MDD: c.MDD,
		PPlanned: c.P, MDDPlanned: c.MDD, SE: c.SE, DF: c.DF, Pooled: true}, nil
}
