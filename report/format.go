package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/corl-project/corl/stats"
)

// Markdown writes the table.
func (t Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| method | seeds |")
	for _, task := range t.Tasks {
		b.WriteString(" " + task + " |")
	}
	b.WriteString(" average | gain vs base (paired) | greedy pass@1 | greedy gain (paired) | FLOPs | compute seconds |\n|---|---|")
	for range t.Tasks {
		b.WriteString("---|")
	}
	b.WriteString("---|---|---|---|---|---|\n")
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "| %s | %d |", r.Method, r.Seeds)
		for _, task := range t.Tasks {
			b.WriteString(" " + formatCI(r.ByTask[task]) + " |")
		}
		fmt.Fprintf(&b, " %s | %s | %s | %s | %s | %s |\n", formatCI(r.Average), r.Gain.String(), formatCI(r.Greedy), r.GreedyGain.String(), formatFLOPs(r.FLOPs), formatSeconds(r.Seconds))
	}
	if slices.ContainsFunc(t.Rows, func(r Row) bool { return r.Collapse != nil }) {
		b.WriteString("\n| method | answer entropy, first -> last round (nats) | distinct answers per prompt, first -> last | modal answer share, last round | runs flagged by a collapse rule | flagged rounds per run |\n|---|---|---|---|---|---|\n")
		for _, r := range t.Rows {
			if c := r.Collapse; c != nil {
				fmt.Fprintf(&b, "| %s | %.2f -> %.2f | %.2f -> %.2f | %.2f | %.0f%% | %.1f |\n", r.Method, c.EntropyFirst, c.EntropyLast, c.DistinctFirst, c.DistinctLast,
					c.ModalLast, 100*c.Flagged, c.FlaggedRounds)
			}
		}
	}
	if len(t.Comparisons) > 0 {
		b.WriteString("\n| method A | method B | A - B (paired) | greedy A - B (paired) |\n|---|---|---|---|\n")
		for _, c := range t.Comparisons {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.A, c.B, c.Diff.String(), c.Greedy.String())
		}
	}
	b.WriteString(membersMarkdown(t.Members))
	b.WriteString(cohortsMarkdown(t.Cohorts))
	b.WriteString(tasksMarkdown(t))
	if len(t.DoseResponse) > 0 {
		b.WriteString("\n| round-0 predictor | slope of gain on it | 95% interval (cohorts resampled) | cohort runs | cohorts |\n|---|---|---|---|---|\n")
		for _, d := range t.DoseResponse {
			fmt.Fprintf(&b, "| %s | %+.3f | %s | %s | %d |\n", d.name(), d.Fit.Slope, d.interval(), d.runs(), d.Fit.Clusters)
		}
	}
	return b.String()
}

// CSV writes the table, one interval as three columns.
func (t Table) CSV() string {
	var b strings.Builder
	b.WriteString("method,seeds,metric")
	for _, task := range append(append([]string(nil), t.Tasks...), "average") {
		fmt.Fprintf(&b, ",%s_mean,%s_lo,%s_hi", task, task, task)
	}
	b.WriteString(",greedy_mean,greedy_lo,greedy_hi,gain_mean,gain_lo,gain_hi,gain_p,gain_p_holm,greedy_gain_mean,greedy_gain_lo,greedy_gain_hi,greedy_gain_p,greedy_gain_p_holm,flops,compute_seconds\n")
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "%q,%d,%q", r.Method, r.Seeds, r.Metric)
		for _, task := range t.Tasks {
			iv := r.ByTask[task]
			fmt.Fprintf(&b, ",%.4f,%.4f,%.4f", iv.Mean, iv.Lo, iv.Hi)
		}
		fmt.Fprintf(&b, ",%.4f,%.4f,%.4f,%.4f,%.4f,%.4f", r.Average.Mean, r.Average.Lo, r.Average.Hi, r.Greedy.Mean, r.Greedy.Lo, r.Greedy.Hi)
		for _, g := range []*Paired{r.Gain, r.GreedyGain} {
			if g != nil {
				fmt.Fprintf(&b, ",%.4f,%.4f,%.4f,%.4g,%.4g", g.Diff.Mean, g.Diff.Lo, g.Diff.Hi, g.P, g.PHolm)
			} else {
				b.WriteString(",,,,,")
			}
		}
		fmt.Fprintf(&b, ",%.4g,%.1f\n", r.FLOPs, r.Seconds)
	}
	return b.String()
}

// String is the gain as "+0.041 [+0.029, +0.053], p 0.012, Holm 0.048"
// ("-" when absent).
func (p *Paired) String() string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%+.3f [%+.3f, %+.3f], p %s, Holm %s", p.Diff.Mean, p.Diff.Lo, p.Diff.Hi, formatP(p.P), formatP(p.PHolm))
}

func formatP(p float64) string {
	if p < 0.001 {
		return "< 0.001"
	}
	return fmt.Sprintf("%.2g", p)
}

func formatCI(iv stats.Interval) string {
	if math.Abs(iv.Hi-iv.Lo) < 1e-9 {
		return fmt.Sprintf("%.3f", iv.Mean)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", iv.Mean, iv.Lo, iv.Hi)
}

// formatSeconds is a row's wall time ("-" for the base, which ran none).
func formatSeconds(s float64) string {
	if s == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f s", s)
}

func formatFLOPs(f float64) string {
	if f == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3g PFLOP", f/1e15)
}
