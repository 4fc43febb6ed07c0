package report

import (
	"fmt"
	"html"
	"path/filepath"
	"strings"

	"github.com/corl-project/corl/stats"
)

// MemberRow is one member of one method's cohorts, every seed: its score
// before training and after (over seeds and problems) and its paired gain,
// so that a peer's gain is seen beside the scored member's, and learning
// from a stronger peer can be told from co-training.
type MemberRow struct {
	Method string         `json:"method"`
	Member string         `json:"member"`
	Base   string         `json:"base"`
	Frozen bool           `json:"frozen,omitempty"`
	Seeds  int            `json:"seeds"`
	Before stats.Interval `json:"before"`
	After  stats.Interval `json:"after"`
	Gain   *Paired        `json:"gain,omitempty"`
}

// memberTable scores every member of every method, in the order of the
// methods' first runs and of each spec's members.
func memberTable(runs []*Run) []MemberRow {
	labels, groups := methodRuns(runs)
	var out []MemberRow
	for i, g := range groups {
		for _, ms := range g[0].Spec.Members {
			row := MemberRow{Method: labels[i], Member: ms.Name, Base: ms.Base, Frozen: ms.Frozen}
			names := []string{ms.Name}
			var kept []*Run
			var before, after []float64
			for _, r := range g {
				first, last := r.Evals[0], r.Evals[len(r.Evals)-1]
				if first.Round != 0 || last.Round == 0 {
					continue
				}
				a, okA := score(first, ms.Name)
				b, okB := score(last, ms.Name)
				if !okA || !okB {
					continue
				}
				kept, before, after = append(kept, r), append(before, a), append(after, b)
			}
			if row.Seeds = len(kept); row.Seeds == 0 {
				continue
			}
			row.Before, row.After = seedInterval(before), seedInterval(after)
			row.Gain = pairedRounds(kept, names, &row.Before, &row.After)
			out = append(out, row)
		}
	}
	return out
}

// pairedRounds is the gain of members (their mean) from each run's first
// evaluation to its last, paired by problem and seed, where every run kept
// per-problem outcomes; there, with several runs, it also sets before and
// after to the levels over seeds and problems. Nil otherwise, leaving
// them as they were.
func pairedRounds(runs []*Run, members []string, before, after *stats.Interval) *Paired {
	from := seedOutcomes(runs, func(r *Run) []float64 { return perProblem(r.Evals[0], members, false) })
	to := seedOutcomes(runs, func(r *Run) []float64 { return perProblem(r.Evals[len(r.Evals)-1], members, false) })
	if from == nil || to == nil {
		return nil
	}
	if lv := level(from); lv != nil && len(runs) > 1 {
		*before = *lv
	}
	if lv := level(to); lv != nil && len(runs) > 1 {
		*after = *lv
	}
	return crossed(from, to, true)
}

// membersMarkdown is the member table as Markdown.
func membersMarkdown(rows []MemberRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n| method | member | base | seeds | before | after | gain (paired) |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s%s | %s | %d | %s | %s | %s |\n", r.Method, r.Member, frozenMark(r.Frozen), baseLabel(r.Base), r.Seeds,
			formatCI(r.Before), formatCI(r.After), r.Gain.String())
	}
	return b.String()
}

// membersHTML is the member table as HTML.
func membersHTML(rows []MemberRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<h2>Every member</h2><p>Each member of each method's cohorts, before training and after, over seeds and problems, and its paired gain: a peer's gain beside the scored member's.</p>")
	b.WriteString(`<table id="members"><tr><th>method</th><th>member</th><th>base</th><th>seeds</th><th>before</th><th>after</th><th>gain (paired)</th></tr>`)
	for _, r := range rows {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s%s</td><td>%s</td><td>%d</td><td class=k>%s</td><td class=k>%s</td><td class=k>%s</td></tr>",
			html.EscapeString(r.Method), html.EscapeString(r.Member), frozenMark(r.Frozen), html.EscapeString(baseLabel(r.Base)), r.Seeds,
			formatCI(r.Before), formatCI(r.After), html.EscapeString(r.Gain.String()))
	}
	b.WriteString("</table>")
	return b.String()
}

func frozenMark(f bool) string {
	if f {
		return " (frozen)"
	}
	return ""
}

// baseLabel is a member's base as a table shows it: a directory's name, or
// an uploaded base's content hash, shortened ("blob 2470a2dbb6a3").
func baseLabel(base string) string {
	if ref, ok := strings.CutPrefix(base, "blob:"); ok {
		parts := strings.Split(ref, "/")
		for _, p := range parts {
			if len(p) >= 12 && strings.Trim(p, "0123456789abcdef") == "" {
				return "blob " + p[:12]
			}
		}
		return base
	}
	return filepath.Base(base)
}
