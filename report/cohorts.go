package report

import (
	"fmt"
	"html"
	"strings"

	"github.com/corl-project/corl/stats"
)

// CohortRow is a cohort-level outcome of one method whose runs train
// several members: the mean over its trained members (frozen ones left
// out) before training and after, over seeds and problems, with its paired
// gain; and the cohort vote (the plurality of every member's pooled
// answers, record.CohortResult) before and after, with the gain paired by
// seed. It answers whether the cohort as a whole improved, beside the
// scored member's row. Its p is descriptive: it is not among the table's
// Holm-corrected tests.
type CohortRow struct {
	Method     string         `json:"method"`
	Members    int            `json:"trained_members"`
	Seeds      int            `json:"seeds"`
	Before     stats.Interval `json:"before"`
	After      stats.Interval `json:"after"`
	Gain       *Paired        `json:"gain,omitempty"`
	VoteBefore stats.Interval `json:"vote_before"`
	VoteAfter  stats.Interval `json:"vote_after"`
	VoteGain   stats.Interval `json:"vote_gain"`
}

// cohortTable is a CohortRow for each method with two or more members.
func cohortTable(runs []*Run) []CohortRow {
	labels, groups := methodRuns(runs)
	var out []CohortRow
	for i, g := range groups {
		if len(g[0].Spec.Members) < 2 {
			continue
		}
		var trained []string
		for _, ms := range g[0].Spec.Members {
			if !ms.Frozen {
				trained = append(trained, ms.Name)
			}
		}
		row := CohortRow{Method: labels[i], Members: len(trained)}
		var kept []*Run
		var before, after, vb, va, vd []float64
		for _, r := range g {
			first, last := r.Evals[0], r.Evals[len(r.Evals)-1]
			if first.Round != 0 || last.Round == 0 || len(trained) == 0 {
				continue
			}
			var a, b float64
			ok := true
			for _, m := range trained {
				x, okA := score(first, m)
				y, okB := score(last, m)
				ok = ok && okA && okB
				a, b = a+x/float64(len(trained)), b+y/float64(len(trained))
			}
			if !ok {
				continue
			}
			kept, before, after = append(kept, r), append(before, a), append(after, b)
			vb, va = append(vb, first.Cohort.Correct), append(va, last.Cohort.Correct)
			vd = append(vd, last.Cohort.Correct-first.Cohort.Correct)
		}
		if row.Seeds = len(kept); row.Seeds == 0 {
			continue
		}
		row.Before, row.After = seedInterval(before), seedInterval(after)
		row.VoteBefore, row.VoteAfter, row.VoteGain = seedInterval(vb), seedInterval(va), seedInterval(vd)
		row.Gain = pairedRounds(kept, trained, &row.Before, &row.After)
		out = append(out, row)
	}
	return out
}

// descriptive is a paired gain with its raw p only (not Holm-corrected).
func descriptive(p *Paired) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%+.3f [%+.3f, %+.3f], p %s", p.Diff.Mean, p.Diff.Lo, p.Diff.Hi, formatP(p.P))
}

func signedCI(iv stats.Interval) string {
	if iv.Hi-iv.Lo < 1e-9 {
		return fmt.Sprintf("%+.3f", iv.Mean)
	}
	return fmt.Sprintf("%+.3f [%+.3f, %+.3f]", iv.Mean, iv.Lo, iv.Hi)
}

const cohortsNote = "The cohort as a whole: the mean over its trained members, before and after, with the gain paired problem by problem, and the cohort vote (every member's answers pooled), with the gain paired by seed; p raw, not among the table's corrected tests."

// cohortsMarkdown is the cohort table as Markdown.
func cohortsMarkdown(rows []CohortRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n" + cohortsNote + "\n\n| method | trained members | seeds | members' mean, before | after | gain (paired) | cohort vote, before | after | vote gain (by seed) |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", r.Method, r.Members, r.Seeds, formatCI(r.Before), formatCI(r.After), descriptive(r.Gain),
			formatCI(r.VoteBefore), formatCI(r.VoteAfter), signedCI(r.VoteGain))
	}
	return b.String()
}

// cohortsHTML is the cohort table as HTML.
func cohortsHTML(rows []CohortRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<h2>Every cohort</h2><p>" + html.EscapeString(cohortsNote) + "</p>")
	b.WriteString(`<table id="cohorts"><tr><th>method</th><th>trained members</th><th>seeds</th><th>members' mean, before</th><th>after</th><th>gain (paired)</th><th>cohort vote, before</th><th>after</th><th>vote gain (by seed)</th></tr>`)
	for _, r := range rows {
		fmt.Fprintf(&b, "<tr><td>%s</td><td class=k>%d</td><td class=k>%d</td><td class=k>%s</td><td class=k>%s</td><td class=k>%s</td><td class=k>%s</td><td class=k>%s</td><td class=k>%s</td></tr>",
			html.EscapeString(r.Method), r.Members, r.Seeds, formatCI(r.Before), formatCI(r.After), html.EscapeString(descriptive(r.Gain)),
			formatCI(r.VoteBefore), formatCI(r.VoteAfter), signedCI(r.VoteGain))
	}
	b.WriteString("</table>")
	return b.String()
}
