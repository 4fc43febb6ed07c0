package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html"
	"image/color"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/corl-project/corl/record"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// series is one line of a plot: y against x, with a band [lo, hi] where
// known.
type series struct {
	name   string
	x, y   []float64
	lo, hi []float64
	// col is the series' colour (its method's); scatter draws points
	// without a line.
	col     color.Color
	scatter bool
}

// svgPlot draws series as an inline SVG of the given size in inches (a
// band under each line that has one). It draws no legend: the report
// shows one legend for every plot, outside them.
func svgPlot(title, xlabel, ylabel string, ss []series, w, h float64) (string, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, ylabel
	for i, s := range ss {
		if len(s.x) == 0 {
			continue
		}
		c := s.col
		if c == nil {
			c = plotutil.Color(i)
		}
		if s.lo != nil {
			poly := make(plotter.XYs, 0, 2*len(s.x))
			for k := range s.x {
				poly = append(poly, plotter.XY{X: s.x[k], Y: s.hi[k]})
			}
			for k := len(s.x) - 1; k >= 0; k-- {
				poly = append(poly, plotter.XY{X: s.x[k], Y: s.lo[k]})
			}
			band, err := plotter.NewPolygon(poly)
			if err != nil {
				return "", err
			}
			r, g, b, _ := c.RGBA()
			band.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 50}
			band.LineStyle.Width = 0
			p.Add(band)
		}
		pts := make(plotter.XYs, len(s.x))
		for k := range s.x {
			pts[k] = plotter.XY{X: s.x[k], Y: s.y[k]}
		}
		if s.scatter {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return "", err
			}
			sc.Color, sc.Shape = c, draw.CircleGlyph{}
			p.Add(sc)
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return "", err
		}
		line.Color, points.Color = c, c
		points.Shape = draw.CircleGlyph{}
		p.Add(line, points)
	}
	canvas := vgsvg.New(vg.Length(w)*vg.Inch, vg.Length(h)*vg.Inch)
	// A margin inside the canvas: browsers' fonts are taller and wider
	// than the metrics the plot is laid out with, and an SVG clips what
	// crosses its edge.
	const margin = 6 * vg.Millimeter
	p.Draw(draw.Crop(draw.New(canvas), margin, -margin, margin, -margin))
	var b bytes.Buffer
	if _, err := canvas.WriteTo(&b); err != nil {
		return "", err
	}
	svg := b.String()
	if i := strings.Index(svg, "<svg"); i > 0 { // drop the XML prolog: the SVG sits inside HTML
		svg = svg[i:]
	}
	return svg, nil
}

// HTML renders the report: the table, the plots and the agreement matrix,
// in one file that needs nothing else.
// figures are the report's plots, each an SVG in a figure with its caption.
func figures(groups [][]*Run, labels []string, t Table, metric string) ([]string, error) {
	var plots []string
	add := func(title, caption, xl, yl string, ss []series, w, h float64) error {
		svg, err := svgPlot(title, xl, yl, ss, w, h)
		if err != nil {
			return fmt.Errorf("report: %s: %w", title, err)
		}
		plots = append(plots, fmt.Sprintf(`<figure style="width:%gin">%s<figcaption>%s</figcaption></figure>`, w, svg, html.EscapeString(caption)))
		return nil
	}
	member := t.Member
	headline := func(task string) func(r *Run, e int, names []string) (float64, float64, bool) {
		return func(r *Run, e int, names []string) (float64, float64, bool) {
			v, ok := meanScore(e, r, names, task)
			return float64(r.Evals[e].Round), v, ok
		}
	}
	band := "band: 95% interval over seeds"
	const wide, tall, small, short = 7.5, 4.0, 3.6, 2.6
	for _, p := range []struct {
		title, caption, xl, yl string
		ss                     []series
	}{
		{metric + " vs round", metric + " on held-out problems after each evaluated round, mean over each method's seeds; " + band, "round", metric,
			methodSeries(groups, labels, member, headline(""))},
		{metric + " vs compute", "the same against cumulative FLOPs (generation, scoring and updates): the compute-normalised comparison", "TFLOP", metric,
			flopsSeries(groups, labels, member)},
	} {
		if err := add(p.title, p.caption, p.xl, p.yl, p.ss, wide, tall); err != nil {
			return nil, err
		}
	}
	for _, task := range t.Tasks { // small multiples, one per task family
		if err := add(task, metric+" on "+task, "round", metric, methodSeries(groups, labels, member, headline(task)), small, short); err != nil {
			return nil, err
		}
	}
	for _, p := range record.DiagnosticPlots {
		ss := roundSeries(groups, labels, member, p.Pick)
		if p.WhereRecorded && !slices.ContainsFunc(ss, func(s series) bool { return len(s.x) > 0 }) {
			continue
		}
		if err := add(p.Title, p.Caption+"; mean over members and seeds", "round", p.Unit, ss, small, short); err != nil {
			return nil, err
		}
	}
	for _, p := range predictors {
		ss := predictorScatter(groups, labels, member, p.pick)
		if len(ss) == 0 {
			continue
		}
		if err := add("gain vs round-0 "+p.name, "each cohort run's gain in "+metric+" against its members' round-0 "+p.name+", with the least-squares line", "round-0 "+p.name, "gain", ss, small, short); err != nil {
			return nil, err
		}
	}
	return plots, nil
}

func HTML(runs []*Run, t Table) (string, error) {
	metric := "pass@1"
	if len(t.Rows) > 0 {
		metric = t.Rows[0].Metric
	}
	labels, groups := methodRuns(runs)
	plots, err := figures(groups, labels, t, metric)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>corl report</title><style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:.3em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}figure{display:inline-block;vertical-align:top;margin:.5em}figcaption{font-size:.9em;color:#555}
.k{font-variant-numeric:tabular-nums}.legend{list-style:none;padding:0;columns:3;font-size:.9em}
.legend li{break-inside:avoid;margin:.15em 0}.swatch{display:inline-block;width:1.6em;height:.8em;margin-right:.4em;vertical-align:middle}</style></head><body>`)
	fmt.Fprintf(&b, "<h1>corl report</h1><p>%d run(s), made %s. Numbers are %s on held-out problems; intervals are 95%%, over training seeds and problems together when there are several seeds (a two-way random-effects variance, Student t), else a bootstrap over problems; each p is shown raw and Holm-corrected over every test of the table.</p>",
		len(runs), time.Now().UTC().Format("2006-01-02 15:04 UTC"), html.EscapeString(metric))
	if t.PairedSeeds {
		b.WriteString("<p>Methods that ran the same seeds are compared seed by seed (--paired-seeds): each seed's shared base draws and data order cancel out of their differences.</p>")
	}
	if t.Member != "" {
		fmt.Fprintf(&b, "<p>The table scores member %s in every run (the member the compared runs share); the plots show every member.</p>", html.EscapeString(t.Member))
	}
	b.WriteString("<h2>Results</h2><table id=\"results\"><tr><th>method</th><th>seeds</th>")
	for _, task := range t.Tasks {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(task))
	}
	b.WriteString("<th>average</th><th>gain vs base (paired)</th><th>greedy pass@1</th><th>greedy gain (paired)</th><th>FLOPs</th><th>compute seconds</th></tr>")
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td>", html.EscapeString(r.Method), r.Seeds)
		for _, task := range t.Tasks {
			fmt.Fprintf(&b, "<td class=k>%s</td>", formatCI(r.ByTask[task]))
		}
		fmt.Fprintf(&b, "<td class=k>%s</td><td class=k>%s</td><td class=k>%s</td><td class=k>%s</td><td class=k>%s</td><td class=k>%s</td></tr>",
			formatCI(r.Average), html.EscapeString(r.Gain.String()), formatCI(r.Greedy), html.EscapeString(r.GreedyGain.String()), formatFLOPs(r.FLOPs), formatSeconds(r.Seconds))
	}
	b.WriteString("</table>")
	if slices.ContainsFunc(t.Rows, func(r Row) bool { return r.Collapse != nil }) {
		b.WriteString("<h2>Collapse</h2><p>The scored members' training samples: entropy of the answers sampled per prompt and their number of distinct answers, first and last round, mean over seeds; the last round's modal answer share; and how many runs, and rounds per run, the declared collapse rules flagged (a member's votes on one answer across prompts, or two members agreeing on wrong labels: README, Rewards).</p>")
		b.WriteString("<table id=\"collapse\"><tr><th>method</th><th>answer entropy, first &rarr; last (nats)</th><th>distinct answers, first &rarr; last</th><th>modal answer share, last</th><th>runs flagged</th><th>flagged rounds per run</th></tr>")
		for _, r := range t.Rows {
			if c := r.Collapse; c != nil {
				fmt.Fprintf(&b, "<tr><td>%s</td><td class=k>%.2f &rarr; %.2f</td><td class=k>%.2f &rarr; %.2f</td><td class=k>%.2f</td><td class=k>%.0f%%</td><td class=k>%.1f</td></tr>",
					html.EscapeString(r.Method), c.EntropyFirst, c.EntropyLast, c.DistinctFirst, c.DistinctLast, c.ModalLast, 100*c.Flagged, c.FlaggedRounds)
			}
		}
		b.WriteString("</table>")
	}
	if len(t.Comparisons) > 0 {
		b.WriteString("<h2>Methods compared</h2><p>Each method's per-problem outcomes minus another's on the same problems; the interval holds both methods' seed variance and the problems' (see the table's note), p raw and Holm-corrected.</p>")
		b.WriteString("<table id=\"comparisons\"><tr><th>method A</th><th>method B</th><th>A - B (paired)</th><th>greedy A - B (paired)</th></tr>")
		for _, c := range t.Comparisons {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td class=k>%s</td><td class=k>%s</td></tr>",
				html.EscapeString(c.A), html.EscapeString(c.B), html.EscapeString(c.Diff.String()), html.EscapeString(c.Greedy.String()))
		}
		b.WriteString("</table>")
	}
	b.WriteString(membersHTML(t.Members))
	if len(t.DoseResponse) > 0 {
		b.WriteString("<h2>Dose-response</h2><p>Each cohort run's gain regressed on its members' round-0 diagnostics (the scatters below), across every cohort; the interval resamples whole cohorts, a cohort's seeds together.</p>")
		b.WriteString("<table id=\"dose\"><tr><th>round-0 predictor</th><th>slope of gain on it</th><th>95% interval</th><th>cohort runs</th><th>cohorts</th></tr>")
		for _, d := range t.DoseResponse {
			fmt.Fprintf(&b, "<tr><td>%s</td><td class=k>%+.3f</td><td class=k>%s</td><td class=k>%s</td><td class=k>%d</td></tr>",
				html.EscapeString(d.name()), d.Fit.Slope, html.EscapeString(d.interval()), html.EscapeString(d.runs()), d.Fit.Clusters)
		}
		b.WriteString("</table>")
	}
	b.WriteString("<h2>Over training</h2>")
	b.WriteString(legendHTML(labels))
	b.WriteString(strings.Join(plots, "\n"))
	b.WriteString(tasksHTML(t))
	b.WriteString(cohortsHTML(t.Cohorts)) // after the plots: the first screen holds the results and the curves
	b.WriteString(agreementHTML(groups, labels))
	b.WriteString("<h2>Runs</h2><ul>")
	for _, r := range runs {
		fmt.Fprintf(&b, "<li>%s: %s, %d rounds, seed %d, members %s</li>", html.EscapeString(r.Spec.Name), html.EscapeString(r.Method()),
			len(r.Rounds), r.Spec.Seed, html.EscapeString(strings.Join(r.Spec.MemberNames(), ", ")))
	}
	b.WriteString("</ul></body></html>\n")
	return b.String(), nil
}

// agreementHTML is one table of every cohort run's member pairs, by
// method and seed: kappa and complementarity of their per-problem
// correctness at round 0 and at the last evaluation.
func agreementHTML(groups [][]*Run, labels []string) string {
	var b strings.Builder
	for i, g := range groups {
		g = slices.SortedFunc(slices.Values(g), func(x, y *Run) int { return cmp.Compare(x.Spec.Seed, y.Spec.Seed) })
		for _, r := range g {
			first, last := r.Evals[0], r.Evals[len(r.Evals)-1]
			for _, p := range slices.Sorted(maps.Keys(last.Kappa)) {
				k0, c0 := "-", "-"
				if v, ok := first.Kappa[p]; ok && first.Round == 0 {
					k0, c0 = fmt.Sprintf("%.2f", v), fmt.Sprintf("%.2f", first.Compl[p])
				}
				fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%s</td><td class=k>%s</td><td class=k>%.2f</td><td class=k>%s</td><td class=k>%.2f</td></tr>",
					html.EscapeString(labels[i]), r.Spec.Seed, html.EscapeString(p), k0, last.Kappa[p], c0, last.Compl[p])
			}
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "<h2>Agreement between members</h2><table id=\"agreement\"><tr><th>method</th><th>seed</th><th>pair</th><th>kappa, round 0</th><th>kappa, last</th><th>complementarity, round 0</th><th>complementarity, last</th></tr>" +
		b.String() + "</table>"
}
