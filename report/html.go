package report

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"slices"
	"strings"
	"time"

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
}

// svgPlot draws series as an inline SVG (a band under each line that has one).
func svgPlot(title, xlabel, ylabel string, ss []series) (string, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, ylabel
	p.Legend.Top = true
	for i, s := range ss {
		if len(s.x) == 0 {
			continue
		}
		c := plotutil.Color(i)
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
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return "", err
		}
		line.Color, points.Color = c, c
		points.Shape = draw.CircleGlyph{}
		p.Add(line, points)
		p.Legend.Add(s.name, line)
	}
	canvas := vgsvg.New(7.5*vg.Inch, 4*vg.Inch)
	p.Draw(draw.New(canvas))
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
func HTML(runs []*Run, t Table) (string, error) {
	var plots []string
	add := func(title, caption, xl, yl string, ss []series) error {
		svg, err := svgPlot(title, xl, yl, ss)
		if err != nil {
			return fmt.Errorf("report: %s: %w", title, err)
		}
		plots = append(plots, fmt.Sprintf("<figure>%s<figcaption>%s</figcaption></figure>", svg, html.EscapeString(caption)))
		return nil
	}
	var byRound, byFLOPs, entropy, distinct, labelAcc []series
	for _, r := range runs {
		flops := r.FLOPs()
		for _, name := range memberNames(r.Evals[0]) {
			label := runLabel(r) + " / " + name
			var s, f series
			s.name, f.name = label, label
			for _, e := range r.Evals {
				v, ok := score(e, name)
				if !ok {
					continue
				}
				ci := scoreCI(e.Members[name])
				s.x, s.y, s.lo, s.hi = append(s.x, float64(e.Round)), append(s.y, v), append(s.lo, ci.Lo), append(s.hi, ci.Hi)
				fl := 0.0
				if e.Round > 0 && e.Round <= len(flops) {
					fl = flops[e.Round-1]
				}
				f.x, f.y, f.lo, f.hi = append(f.x, fl/1e12), append(f.y, v), append(f.lo, ci.Lo), append(f.hi, ci.Hi)
			}
			byRound, byFLOPs = append(byRound, s), append(byFLOPs, f)
		}
		for i := range r.Spec.Members {
			name := r.Spec.Members[i].Name
			label := runLabel(r) + " / " + name
			en, di, la := series{name: label}, series{name: label}, series{name: label}
			for _, m := range r.Rounds {
				if i >= len(m.Diag.Models) {
					continue
				}
				d := m.Diag.Models[i]
				x := float64(m.Round + 1)
				en.x, en.y = append(en.x, x), append(en.y, d.AnswerEntropy)
				di.x, di.y = append(di.x, x), append(di.y, d.DistinctAnswers)
				if d.PseudoLabelAcc != nil {
					la.x, la.y = append(la.x, x), append(la.y, *d.PseudoLabelAcc)
				}
			}
			entropy, distinct, labelAcc = append(entropy, en), append(distinct, di), append(labelAcc, la)
		}
	}
	metric := "pass@1"
	if len(t.Rows) > 0 {
		metric = t.Rows[0].Metric
	}
	for _, p := range []struct {
		title, caption, xl, yl string
		ss                     []series
	}{
		{metric + " vs round", metric + " on held-out problems after each evaluated round; band: 95% interval over problems", "round", metric, byRound},
		{metric + " vs compute", "the same against cumulative generation and update FLOPs: the compute-normalised comparison", "TFLOP", metric, byFLOPs},
		{"answer entropy", "entropy of the answers sampled per prompt: self-reward collapse shows as a fall towards 0", "round", "nats", entropy},
		{"distinct answers", "distinct answers among a prompt's samples", "round", "answers", distinct},
		{"pseudo-label accuracy", "how often a member's label was right (a diagnostic: labels never reach label-free rewards)", "round", "accuracy", labelAcc},
	} {
		if err := add(p.title, p.caption, p.xl, p.yl, p.ss); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>corl report</title><style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:.3em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}figure{display:inline-block;margin:.5em}figcaption{font-size:.9em;color:#555}
.k{font-variant-numeric:tabular-nums}</style></head><body>`)
	fmt.Fprintf(&b, "<h1>corl report</h1><p>%d run(s), made %s. Numbers are %s on held-out problems; intervals are 95%%, over training seeds and problems together when there are several seeds (a two-way random-effects variance, Student t), else a bootstrap over problems; each p is shown raw and Holm-corrected over every test of the table.</p>",
		len(runs), time.Now().UTC().Format("2006-01-02 15:04 UTC"), html.EscapeString(metric))
	if t.Member != "" {
		fmt.Fprintf(&b, "<p>The table scores member %s in every run (the member the compared runs share); the plots show every member.</p>", html.EscapeString(t.Member))
	}
	b.WriteString("<h2>Results</h2><table id=\"results\"><tr><th>method</th><th>seeds</th>")
	for _, task := range t.Tasks {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(task))
	}
	b.WriteString("<th>average</th><th>gain vs base (paired)</th><th>greedy pass@1</th><th>greedy gain (paired)</th><th>FLOPs</th></tr>")
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td>", html.EscapeString(r.Method), r.Seeds)
		for _, task := range t.Tasks {
			fmt.Fprintf(&b, "<td class=k>%s</td>", formatCI(r.ByTask[task]))
		}
		fmt.Fprintf(&b, "<td class=k>%s</td><td class=k>%s</td><td class=k>%s</td><td class=k>%s</td><td class=k>%s</td></tr>",
			formatCI(r.Average), html.EscapeString(r.Gain.String()), formatCI(r.Greedy), html.EscapeString(r.GreedyGain.String()), formatFLOPs(r.FLOPs))
	}
	b.WriteString("</table>")
	if slices.ContainsFunc(t.Rows, func(r Row) bool { return r.Collapse != nil }) {
		b.WriteString("<h2>Collapse</h2><p>The scored members' training samples: entropy of the answers sampled per prompt and their number of distinct answers, first and last round, mean over seeds.</p>")
		b.WriteString("<table id=\"collapse\"><tr><th>method</th><th>answer entropy, first &rarr; last (nats)</th><th>distinct answers, first &rarr; last</th></tr>")
		for _, r := range t.Rows {
			if c := r.Collapse; c != nil {
				fmt.Fprintf(&b, "<tr><td>%s</td><td class=k>%.2f &rarr; %.2f</td><td class=k>%.2f &rarr; %.2f</td></tr>",
					html.EscapeString(r.Method), c.EntropyFirst, c.EntropyLast, c.DistinctFirst, c.DistinctLast)
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
	b.WriteString("<h2>Over training</h2>")
	b.WriteString(strings.Join(plots, "\n"))
	b.WriteString("<h2>Agreement between members (last evaluation)</h2>")
	for _, r := range runs {
		last := r.Evals[len(r.Evals)-1]
		if len(last.Kappa) == 0 {
			continue
		}
		pairs := make([]string, 0, len(last.Kappa))
		for p := range last.Kappa {
			pairs = append(pairs, p)
		}
		slices.Sort(pairs)
		fmt.Fprintf(&b, "<h3>%s</h3><table><tr><th>pair</th><th>Cohen's kappa</th><th>complementarity</th></tr>", html.EscapeString(runLabel(r)))
		for _, p := range pairs {
			fmt.Fprintf(&b, "<tr><td>%s</td><td class=k>%.2f</td><td class=k>%.2f</td></tr>", html.EscapeString(p), last.Kappa[p], last.Compl[p])
		}
		b.WriteString("</table>")
	}
	b.WriteString("<h2>Runs</h2><ul>")
	for _, r := range runs {
		fmt.Fprintf(&b, "<li>%s: %s, %d rounds, seed %d, members %s</li>", html.EscapeString(r.Spec.Name), html.EscapeString(r.Method()),
			len(r.Rounds), r.Spec.Seed, html.EscapeString(strings.Join(r.Spec.MemberNames(), ", ")))
	}
	b.WriteString("</ul></body></html>\n")
	return b.String(), nil
}

func runLabel(r *Run) string { return fmt.Sprintf("%s s%d", r.Spec.Name, r.Spec.Seed) }
