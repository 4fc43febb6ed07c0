package report

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"slices"
	"strings"

	"github.com/corl-project/corl/cohort"
	"github.com/corl-project/corl/record"
)

// problemTasks is the task of each of r's evaluation problems, in the
// order its records keep per-problem outcomes. The records hold each
// problem's outcome but not its task, so it is rebuilt from the run's
// spec (cohort.LoadData, the problems the run was evaluated on) and
// checked against what the round-0 evaluation recorded: for every member,
// each task's share of right greedy answers, and of right samples, must be
// the recorded one. Nil where the problems cannot be rebuilt (a data file
// absent here) or do not match; cache holds what earlier runs of the same
// data gave.
func problemTasks(r *Run, cache map[string][]string) []string {
	if r.Spec.Data.File != "" {
		return nil // a file's rows are one task, and the file may not be at hand where the report is drawn
	}
	key, _ := json.Marshal([]any{r.Spec.Data, r.Spec.Eval.Split, r.Spec.Eval.Size, r.Spec.Eval.PredictorSplit})
	tasks, ok := cache[string(key)]
	if !ok {
		if d, err := cohort.LoadData(&r.Spec); err == nil {
			for _, p := range d.Eval {
				tasks = append(tasks, p.Task)
			}
		}
		cache[string(key)] = tasks
	}
	if tasks == nil || !tasksMatch(r.Evals[0], tasks) {
		return nil
	}
	return tasks
}

// tasksMatch says whether every member's per-task scores in e are those
// its per-problem outcomes give under tasks.
func tasksMatch(e record.Eval, tasks []string) bool {
	for _, m := range e.Members {
		if len(m.Correct) != len(tasks) {
			return false
		}
		right, sampled, n := map[string]float64{}, map[string]float64{}, map[string]float64{}
		for i, task := range tasks {
			n[task]++
			if m.Correct[i] {
				right[task]++
			}
			if m.Samples > 0 && i < len(m.SampleCorrect) {
				sampled[task] += float64(m.SampleCorrect[i]) / float64(m.Samples)
			}
		}
		if len(n) != len(m.ByTask) {
			return false
		}
		for task, c := range n {
			v, ok := m.ByTask[task]
			if !ok || math.Abs(right[task]/c-v) > 1e-9 {
				return false
			}
			if m.Samples > 0 && math.Abs(sampled[task]/c-m.SampledByTask[task]) > 1e-9 {
				return false
			}
		}
	}
	return true
}

// gainsByTask is each task's paired gain of a method over its base: the
// seeds' outcomes on that task's problems alone (crossed, paired by
// seed); nil unless every seed's problems are known (problemTasks) and the
// same.
func gainsByTask(ss []sample, tasks []string) map[string]*Paired {
	if len(ss) == 0 || ss[0].tasks == nil {
		return nil
	}
	for _, s := range ss[1:] {
		if !slices.Equal(s.tasks, ss[0].tasks) {
			return nil
		}
	}
	if len(tasks) < 2 {
		return nil // one task's gain is the row's own
	}
	out := map[string]*Paired{}
	for _, task := range tasks {
		var idx []int
		for i, pt := range ss[0].tasks {
			if pt == task {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			continue
		}
		pick := func(x []float64) []float64 {
			if len(x) != len(ss[0].tasks) {
				return nil
			}
			out := make([]float64, len(idx))
			for j, i := range idx {
				out[j] = x[i]
			}
			return out
		}
		if g := pairedGain(ss, func(s sample) ([]float64, []float64) { return pick(s.from), pick(s.to) }); g != nil {
			out[task] = g
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

const tasksNote = "Each method's gain over its base on each task family's problems alone, paired problem by problem and by seed; p raw, not among the table's corrected tests. A task's problems are rebuilt from the runs' specs and checked against the recorded per-task scores."

// tasksMarkdown is the per-task gains as Markdown; empty when no row has them.
func tasksMarkdown(t Table) string {
	if !slices.ContainsFunc(t.Rows, func(r Row) bool { return r.GainByTask != nil }) || len(t.Tasks) < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n" + tasksNote + "\n\n| method |")
	for _, task := range t.Tasks {
		fmt.Fprintf(&b, " gain on %s |", task)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(t.Tasks)) + "\n")
	for _, r := range t.Rows {
		if r.GainByTask == nil {
			continue
		}
		b.WriteString("| " + r.Method + " |")
		for _, task := range t.Tasks {
			b.WriteString(" " + descriptive(r.GainByTask[task]) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// tasksHTML is the per-task gains as HTML.
func tasksHTML(t Table) string {
	if !slices.ContainsFunc(t.Rows, func(r Row) bool { return r.GainByTask != nil }) || len(t.Tasks) < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<h2>Gains by task</h2><p>" + html.EscapeString(tasksNote) + "</p><table id=\"task-gains\"><tr><th>method</th>")
	for _, task := range t.Tasks {
		b.WriteString("<th>gain on " + html.EscapeString(task) + "</th>")
	}
	b.WriteString("</tr>")
	for _, r := range t.Rows {
		if r.GainByTask == nil {
			continue
		}
		b.WriteString("<tr><td>" + html.EscapeString(r.Method) + "</td>")
		for _, task := range t.Tasks {
			b.WriteString("<td class=k>" + html.EscapeString(descriptive(r.GainByTask[task])) + "</td>")
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>")
	return b.String()
}
