package devcli

import (
	"fmt"
	"io"
	"strings"

	"github.com/corl-project/corl/report"
	"github.com/corl-project/corl/stats"
)

// explainRun prints what a finished run did to each member, paired
// problem by problem (the first evaluation against the last), and a line
// on each number the watch printed: the quickstart's closing words.
func explainRun(w io.Writer, r *report.Run) {
	if len(r.Evals) < 2 {
		fmt.Fprintln(w, "(fewer than two evaluations: nothing to compare)")
		return
	}
	first, last := r.Evals[0], r.Evals[len(r.Evals)-1]
	fmt.Fprintf(w, "\nwhat training did to each member (%s reward: no labels seen in training; the held-out answers only score it):\n", r.Spec.Reward.Mode)
	gained := 0
	for _, name := range r.Spec.MemberNames() {
		a, okA := first.Members[name]
		b, okB := last.Members[name]
		if !okA || !okB || len(a.Correct) != len(b.Correct) {
			continue
		}
		iv, _ := stats.PairedDiff(a.Scores(), b.Scores(), 1)
		lost, won, p := stats.McNemar(a.Correct, b.Correct)
		verdict := "no change a paired test can tell from chance"
		switch {
		case p < 0.05 && iv.Mean > 0:
			verdict = "a gain, unlikely by chance"
			gained++
		case p < 0.05:
			verdict = "a loss, unlikely by chance"
		}
		fmt.Fprintf(w, "  %-12s pass@1 %.3f -> %.3f  %+.3f [%+.3f, %+.3f]; of %d test problems %d newly solved, %d lost: McNemar p %.3f, %s\n",
			name, a.PassAt1, b.PassAt1, iv.Mean, iv.Lo, iv.Hi, len(a.Correct), won, lost, p, verdict)
	}
	if gained == 0 {
		fmt.Fprintln(w, "  no member gained measurably in this run")
	}
	if len(r.Rounds) > 0 {
		fmt.Fprintf(w, "what each member was taught, averaged over the %d rounds:\n", len(r.Rounds))
		for i, name := range r.Spec.MemberNames() {
			var reward, labeled, acc float64
			nacc := 0
			for _, m := range r.Rounds {
				if i >= len(m.Diag.Models) {
					continue
				}
				d := m.Diag.Models[i]
				reward += d.RewardMean
				labeled += d.LabeledFrac
				if d.PseudoLabelAcc != nil {
					acc += *d.PseudoLabelAcc
					nacc++
				}
			}
			n := float64(len(r.Rounds))
			line := fmt.Sprintf("  %-12s reward %.2f, labeled %.0f%% of prompts", name, reward/n, 100*labeled/n)
			if nacc > 0 {
				line += fmt.Sprintf(", those labels right %.0f%% of the time", 100*acc/float64(nacc))
			}
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprint(w, strings.TrimLeft(`
what the numbers mean:
  pass@1       share of the held-out test problems a member answers right, greedily; [lo, hi] is a 95% bootstrap
               interval over problems. Round 0 is the base, before any training.
  paired       the same problems before and after: McNemar's p is the chance of a split at least this lopsided
               between newly solved and lost problems if training had changed nothing.
  reward       share of a member's sampled answers that matched the label it was given: under peer-ring, the
               answer its peer's own 8 samples voted for (member i learns from member i-1).
  labeled      share of prompts the peer's vote labelled: a unique most common answer. A tie (two answers equally
               common) labels nothing, so no answer ever wins by its spelling.
  label-acc    how often those labels were right: measured with the held-out answers, never shown to training.
  cohort vote  pass@1 of the answer most common across all members; with two members every disagreement is a tie
               (the "ties" share), so it reads low: it is a diagnostic, not a model.
  kappa, compl how alike the members' right and wrong answers are beyond chance (1: the same problems), and the
               share of problems exactly one of them solves: what each can teach the other.
why it can work here: the two bases were pretrained with opposite designed blind spots (docs/zoo.md), so
they err on different problems and each one's vote corrects some of the other's errors. Bases whose errors
overlap teach each other their mistakes; docs/research.md says where peer reward gains and where it does not.
`, "\n"))
}
