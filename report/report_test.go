package report

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/rl"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/stats"
)

// fakeRun writes a run directory: spec.json and metrics.jsonl with an
// evaluation before round 1 and after the last round, where each member
// scores base then final (sampled pass@1, by task).
func fakeRun(t *testing.T, name, mode string, seed uint64, members []spec.Member, base, final float64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	os.MkdirAll(dir, 0o755)
	s := spec.Default()
	s.Name, s.Seed, s.Reward.Mode, s.Members, s.Rounds = name, seed, mode, members, 2
	b, _ := json.Marshal(s)
	os.WriteFile(filepath.Join(dir, "spec.json"), b, 0o644)
	eval := func(round int, v float64) record.Eval {
		e := record.Eval{Round: round, Schema: record.Schema, Members: map[string]evaluate.Result{}, Kappa: map[string]float64{}, Compl: map[string]float64{}}
		for _, m := range members {
			ci := stats.Interval{Mean: v, Lo: v - 0.02, Hi: v + 0.02}
			e.Members[m.Name] = evaluate.Result{N: 100, PassAt1: v + 0.05, Samples: 8, SampledPassAt1: v,
				SampledByTask: map[string]float64{"linear": v + 0.1, "mod": v - 0.1}, ByTask: map[string]float64{"linear": v, "mod": v},
				PassAt1CI: ci, SampledCI: &ci}
		}
		if len(members) == 2 {
			key := members[0].Name + "/" + members[1].Name
			e.Kappa[key], e.Compl[key] = 0.4, 0.2
			sf := float64(seed%5) / 10
			agreement := 0.3 + sf/3
			e.Pairs = map[string]record.PairPredictors{key: {Kappa: 0.2 + sf, RescueAB: 0.5 - sf, RescueBA: 0.4 - sf, SharedError: 0.1 + sf/2, AccA: v, AccB: v, Agreement: &agreement}}
		}
		return e
	}
	var lines []string
	add := func(v any) {
		b, _ := json.Marshal(v)
		lines = append(lines, string(b))
	}
	add(map[string]any{"eval": eval(0, base)})
	acc := 0.5
	for r := 0; r < 2; r++ {
		m := record.Round{Round: r, Reward: mode}
		for range members {
			m.Models = append(m.Models, record.ModelRound{GenFLOPs: 1e12, UpdateFLOPs: 2e12, GenSeconds: 4 + float64(seed), UpdateSeconds: 6 + float64(r)})
			m.Diag.Models = append(m.Diag.Models, record.ModelDiag{AnswerEntropy: 1 - 0.3*float64(r), DistinctAnswers: 3, PseudoLabelAcc: &acc})
		}
		rec := map[string]any{"round": m}
		if r == 1 {
			rec["eval"] = eval(2, final)
		}
		add(rec)
	}
	os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	return dir
}

func runs(t *testing.T) []*Run {
	one := []spec.Member{{Name: "m", Base: "b"}}
	var dirs []string
	dirs = append(dirs, fakeRun(t, "gt", rl.GroundTruthRL, 1, one, 0.2, 0.30), fakeRun(t, "gt", rl.GroundTruthRL, 2, one, 0.2, 0.34))
	dirs = append(dirs, fakeRun(t, "ttrl", rl.SelfVote, 1, one, 0.2, 0.1))
	dirs = append(dirs, fakeRun(t, "co", rl.PeerRing, 1, []spec.Member{{Name: "a", Base: "b"}, {Name: "c", Base: "b", View: 1}}, 0.2, 0.25))
	var out []*Run
	for _, d := range dirs {
		r, err := Load(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestTableGroupsSeedsIntoMethods: runs that differ only in seed are one
// row with a t-interval over seeds; each method is named as in the paper;
// the base models appear once per seed (seeds 1 and 2: two evaluations).
func TestTableGroupsSeedsIntoMethods(t *testing.T) {
	tb := BuildTable(runs(t), "")
	var names []string
	for _, r := range tb.Rows {
		names = append(names, r.Method)
	}
	want := []string{"Base", "Ground-truth", "Self-vote (TTRL)", "Co-RL same family + rephrased (peer-ring)"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("rows %q, want %q", names, want)
	}
	gt := tb.Rows[1]
	// seeds 0.30 and 0.34: mean 0.32, sd 0.0283, t(1) 12.706 -> +-0.254
	if gt.Seeds != 2 || gt.Average.Mean < 0.3199 || gt.Average.Mean > 0.3201 || gt.Average.Hi-gt.Average.Mean < 0.25 || gt.Average.Hi-gt.Average.Mean > 0.26 {
		t.Errorf("ground truth %+v: want 2 seeds, 0.32 +- 0.254", gt)
	}
	if got := gt.ByTask["linear"].Mean; got < 0.4199 || got > 0.4201 {
		t.Errorf("ground truth linear %v, want 0.42", got)
	}
	if gt.FLOPs != 6e12 {
		t.Errorf("ground truth FLOPs %v, want 6e12 (2 rounds x 3e12)", gt.FLOPs)
	}
	// rounds of 10+seed and 11+seed seconds: seeds 1 and 2 ran 23 and 25
	if gt.Seconds != 24 || tb.Rows[0].Seconds != 0 {
		t.Errorf("ground truth seconds %v, want 24 (the mean of its runs' rounds); base %v, want 0", gt.Seconds, tb.Rows[0].Seconds)
	}
	md, csv := tb.Markdown(), tb.CSV()
	for _, want := range []string{"| Ground-truth | 2 |", "| Base | 2 |", "average"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(csv, `"Ground-truth",2,"sampled pass@1",0.4200`) {
		t.Errorf("CSV:\n%s", csv)
	}
}

// TestHTMLIsSelfContained: the page has the table and five plots inline,
// and nothing it would fetch.
func TestHTMLIsSelfContained(t *testing.T) {
	rs := runs(t)
	page, err := HTML(rs, BuildTable(rs, ""))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page, "<svg"); n != 13 {
		t.Errorf("%d inline plots, want 13 (two, one per task, four diagnostics, five predictor scatters)", n)
	}
	for _, bad := range []string{"<script", `src="http`, `href="http`, "<link", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page references something outside it: %q", bad)
		}
	}
	for _, want := range []string{`id="results"`, `id="agreement"`, "kappa, round 0", "Self-vote (TTRL)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestALaterDiagnosticIsDrawnWhereRecorded: a diagnostic row marked
// WhereRecorded (vote share) adds no plot to records that lack it, so
// older studies redraw as they were, and its plot where one record has it.
func TestALaterDiagnosticIsDrawnWhereRecorded(t *testing.T) {
	rs := runs(t)
	page, err := HTML(rs, BuildTable(rs, ""))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page, "vote share") {
		t.Error("a vote-share plot for records without vote shares")
	}
	share := 0.9
	rs[0].Rounds[1].Diag.Models[0].VoteShare = &share
	page, err = HTML(rs, BuildTable(rs, ""))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page, "<svg"); n != 14 || !strings.Contains(page, "vote share (self-consistency)") {
		t.Errorf("%d inline plots, want 14 with the vote-share plot", n)
	}
}

// TestReportInABrowser renders the report in headless Chromium (CI installs
// it; skipped without it): the DOM has the table and every plot, and the
// screenshot is a page with content, not a blank or an error page.
func TestReportInABrowser(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (make test-long installs it)")
	}
	rs := runs(t)
	page, err := HTML(rs, BuildTable(rs, ""))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	os.WriteFile(file, []byte(page), 0o644)
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,1600",
		"--user-data-dir=" + filepath.Join(dir, "profile")}
	dom, err := exec.Command(browser, append(args, "--dump-dom", "file://"+file)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if n := bytes.Count(dom, []byte("<svg")); n != 13 || !bytes.Contains(dom, []byte("Ground-truth")) {
		t.Errorf("the rendered DOM has %d plots (want 13) or lacks the table", n)
	}
	shot := filepath.Join(dir, "shot.png")
	if out, err := exec.Command(browser, append(args, "--screenshot="+shot, "file://"+file)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if b.Dx() != 1200 || b.Dy() != 1600 {
		t.Errorf("screenshot %v, want 1200x1600", b)
	}
	inked, colored := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0xF000 || g < 0xF000 || bl < 0xF000 {
				inked++
			}
			if max(r, g, bl)-min(r, g, bl) > 0x3000 { // a plot's coloured line or band
				colored++
			}
		}
	}
	total := (b.Dx() / 2) * (b.Dy() / 2)
	if frac := float64(inked) / float64(total); frac < 0.03 || frac > 0.7 {
		t.Errorf("%.1f%% of the screenshot is not white: blank or broken page", 100*frac)
	}
	if colored < 500 {
		t.Errorf("only %d coloured pixels: the plots did not render", colored)
	}
}

// TestTableOfOneMember: with a member named, every row scores that member
// alone (a pair's other member does not enter its row), runs without it
// are left out, and each method's gain over its base is paired problem by
// problem and averaged over seeds.
func TestTableOfOneMember(t *testing.T) {
	res := func(right []int) evaluate.Result {
		r := evaluate.Result{N: len(right), Samples: 2, SampleCorrect: right, Correct: make([]bool, len(right)),
			ByTask: map[string]float64{"mod": 0}, SampledByTask: map[string]float64{}}
		for i, c := range right {
			r.SampledPassAt1 += float64(c) / 2 / float64(len(right))
			r.Correct[i] = c == 2
		}
		r.SampledByTask["mod"] = r.SampledPassAt1
		ci := stats.Interval{Mean: r.SampledPassAt1, Lo: r.SampledPassAt1, Hi: r.SampledPassAt1}
		r.SampledCI = &ci
		return r
	}
	run := func(name, mode string, seed uint64, members map[string][2][]int) *Run {
		r := &Run{Spec: spec.Default()}
		r.Spec.Name, r.Spec.Seed, r.Spec.Reward.Mode = name, seed, mode
		first := record.Eval{Round: 0, Members: map[string]evaluate.Result{}}
		last := record.Eval{Round: 2, Members: map[string]evaluate.Result{}}
		for _, n := range []string{"a", "c", "x"} {
			m, ok := members[n]
			if !ok {
				continue
			}
			r.Spec.Members = append(r.Spec.Members, spec.Member{Name: n, Base: "base-" + n})
			first.Members[n], last.Members[n] = res(m[0]), res(m[1])
		}
		if len(r.Spec.Members) > 1 {
			first.Cohort.Correct, last.Cohort.Correct = 0.5, 0.75
		}
		r.Evals = []record.Eval{first, last}
		// Two rounds of diagnostics: member i's answer entropy falls from
		// 1+i to seed/2+i nats, its distinct answers from 4 to 2.
		for round, ent := range []func(i int) float64{func(i int) float64 { return 1 + float64(i) }, func(i int) float64 { return float64(seed)/2 + float64(i) }} {
			m := record.Round{Round: round}
			for i := range r.Spec.Members {
				d := record.ModelDiag{AnswerEntropy: ent(i), DistinctAnswers: float64(4 - 2*round)}
				if seed == 1 && round == 1 {
					d.ModalShare = 0.8 // seed 1 ends voting one answer on 80% of prompts: flagged
				}
				m.Diag.Models = append(m.Diag.Models, d)
			}
			r.Rounds = append(r.Rounds, m)
		}
		return r
	}
	base := []int{0, 1, 1, 0}
	rs := []*Run{
		run("gt", rl.GroundTruthRL, 1, map[string][2][]int{"a": {base, {2, 1, 2, 0}}}),
		run("gt", rl.GroundTruthRL, 2, map[string][2][]int{"a": {base, {1, 1, 1, 0}}}),
		run("co", rl.PeerRing, 1, map[string][2][]int{"a": {base, {0, 0, 0, 0}}, "c": {{2, 2, 2, 2}, {2, 2, 2, 2}}}),
		run("other", rl.SelfVote, 1, map[string][2][]int{"x": {base, base}}),
		run("running", rl.Entropy, 1, map[string][2][]int{"a": {base, base}}),
	}
	rs[4].Evals = rs[4].Evals[:1] // evaluated at round 0 only: no Entropy row yet
	tb := BuildTable(rs, "a")
	var names []string
	for _, r := range tb.Rows {
		names = append(names, r.Method)
	}
	if want := []string{"Base", "Ground-truth", "Co-RL different family (peer-ring)"}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("rows %q, want %q", names, want)
	}
	if b := tb.Rows[0]; b.Average.Mean != 0.25 || b.Gain != nil {
		t.Errorf("base row %+v: want a's 0.25 and no gain", b)
	}
	// Seeds' finals 5/8 and 3/8 of samples against the base's 2/8, on the
	// same four problems: per-problem gains 0.75, 0, 0.25, 0 -> +0.25.
	gt := tb.Rows[1]
	if gt.Gain == nil || gt.Gain.Problems != 4 || math.Abs(gt.Gain.Diff.Mean-0.25) > 1e-12 {
		t.Errorf("ground-truth gain %+v, want +0.25 over 4 problems", gt.Gain)
	}
	// The pair's row is a's 0 (c, at 1.0, is not averaged in), a paired loss of 0.25.
	co := tb.Rows[2]
	if co.Average.Mean != 0 || co.Gain == nil || math.Abs(co.Gain.Diff.Mean+0.25) > 1e-12 {
		t.Errorf("co-rl row %+v gain %+v: want a's 0 and -0.25", co, co.Gain)
	}
	// Greedy (all samples right): base right on none; seed 1 right on
	// problems 0 and 2, seed 2 on none -> per-problem 0.5, 0, 0.5, 0: +0.25.
	if g := gt.GreedyGain; g == nil || math.Abs(g.Diff.Mean-0.25) > 1e-12 {
		t.Errorf("ground-truth greedy gain %+v, want +0.25", g)
	}
	// Collapse: ground truth's member a (index 0) falls from 1 to the
	// seeds' mean of 1/2 and 2/2; the pair's a is its first member too.
	if c := gt.Collapse; c == nil || c.EntropyFirst != 1 || c.EntropyLast != 0.75 || c.DistinctFirst != 4 || c.DistinctLast != 2 {
		t.Errorf("ground-truth collapse %+v, want entropy 1 -> 0.75, distinct 4 -> 2", c)
	}
	if c := gt.Collapse; c == nil || c.ModalLast != 0.4 || c.Flagged != 0.5 || c.FlaggedRounds != 0.5 {
		t.Errorf("ground-truth collapse flags %+v, want modal share 0.4 and one of two seeds flagged in one round", c)
	}
	if tb.Rows[0].Collapse != nil {
		t.Errorf("the base row has collapse numbers %+v", tb.Rows[0].Collapse)
	}
	// Methods against each other on the same problems: ground truth's
	// seed-averaged 0.75, 0.5, 0.75, 0 against the pair's zeros -> +0.5;
	// greedy 0.5, 0, 0.5, 0 against none -> +0.25.
	if len(tb.Comparisons) != 1 {
		t.Fatalf("comparisons %+v, want ground truth against the pair only", tb.Comparisons)
	}
	if c := tb.Comparisons[0]; c.A != "Ground-truth" || c.B != co.Method || c.Diff.Problems != 4 ||
		math.Abs(c.Diff.Diff.Mean-0.5) > 1e-12 || c.Greedy == nil || math.Abs(c.Greedy.Diff.Mean-0.25) > 1e-12 {
		t.Errorf("comparison %+v (%v, greedy %v), want ground truth minus the pair +0.5, greedy +0.25", c, c.Diff, c.Greedy)
	}
	if md := tb.Markdown(); !strings.Contains(md, "+0.250 [") || !strings.Contains(md, "gain vs base (paired)") || !strings.Contains(md, "| Ground-truth | Co-RL different family (peer-ring) | +0.500 [") {
		t.Errorf("Markdown lacks the paired gain:\n%s", md)
	}
	// Without a member, the pair's row is the mean of a and c.
	if all := BuildTable(rs, ""); len(all.Rows) < 4 {
		t.Errorf("all members: %d rows, want the other run's too", len(all.Rows))
	}
	// Every member is scored, the peer c beside a: c stays at 1.0 while
	// a falls from 0.25 to 0; ground truth's a gains +0.25 over two seeds.
	rows := map[string]MemberRow{}
	for _, m := range tb.Members {
		rows[m.Method+"/"+m.Member] = m
	}
	if c := rows[co.Method+"/c"]; c.Seeds != 1 || c.Before.Mean != 1 || c.After.Mean != 1 || c.Gain == nil || c.Gain.Diff.Mean != 0 {
		t.Errorf("the peer's row %+v", c)
	}
	if a := rows[co.Method+"/a"]; a.Gain == nil || math.Abs(a.Gain.Diff.Mean+0.25) > 1e-12 {
		t.Errorf("the scored member's row %+v", a)
	}
	if g := rows["Ground-truth/a"]; g.Seeds != 2 || g.Gain == nil || math.Abs(g.Gain.Diff.Mean-0.25) > 1e-12 || g.Gain.PHolm < g.Gain.P {
		t.Errorf("ground truth's member row %+v", g)
	}
	if md := tb.Markdown(); !strings.Contains(md, "| "+co.Method+" | c | base-c | 1 | 1.000 | 1.000 | +0.000") {
		t.Errorf("Markdown lacks the member table:\n%s", md)
	}
	// The cohort as a whole: a and c's mean falls from (0.25 + 1) / 2 to
	// 0.5, problem by problem -0.125; its vote rises from 0.5 to 0.75.
	// Only the pair has a cohort; with c frozen, the cohort's trained mean
	// is a's alone.
	if len(tb.Cohorts) != 1 {
		t.Fatalf("cohort rows %+v, want the pair's only", tb.Cohorts)
	}
	if c := tb.Cohorts[0]; c.Method != co.Method || c.Members != 2 || c.Before.Mean != 0.625 || c.After.Mean != 0.5 || c.Gain == nil ||
		math.Abs(c.Gain.Diff.Mean+0.125) > 1e-12 || c.VoteBefore.Mean != 0.5 || c.VoteAfter.Mean != 0.75 || c.VoteGain.Mean != 0.25 {
		t.Errorf("cohort row %+v (gain %v), want 0.625 -> 0.5 (-0.125), vote 0.5 -> 0.75", c, c.Gain)
	}
	if md := tb.Markdown(); !strings.Contains(md, "| "+co.Method+" | 2 | 1 | 0.625 | 0.500 | -0.125 [") || !strings.Contains(md, "| 0.500 | 0.750 | +0.250 |") {
		t.Errorf("Markdown lacks the cohort table:\n%s", md)
	}
	rs[2].Spec.Members[1].Frozen = true
	if c := BuildTable(rs, "a").Cohorts; len(c) != 1 || c[0].Members != 1 || c[0].Before.Mean != 0.25 || c[0].After.Mean != 0 {
		t.Errorf("cohort rows with the peer frozen %+v, want a's 0.25 -> 0 alone", c)
	}
}

// TestUploadedBasesNamedByFamily: a run read from Temporal names its bases
// by blob-store references; the cohort's make-up comes from their
// config.json in the store, not from the references (which always differ).
func TestUploadedBasesNamedByFamily(t *testing.T) {
	store := blob.Local{Root: t.TempDir()}
	ctx := context.Background()
	for key, family := range map[string]string{"uploads/a": "llama", "uploads/b": "llama", "uploads/c": "gpt2"} {
		if err := store.Put(ctx, key+"/config.json", []byte(`{"model_type":"`+family+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	run := func(a, b string) *Run {
		r := &Run{Spec: spec.Default()}
		r.Spec.Reward.Mode = rl.PeerRing
		r.Spec.Members = []spec.Member{{Name: "x", Base: blob.BlobRef + a + "/manifest.json"}, {Name: "y", Base: blob.BlobRef + b + "/manifest.json"}}
		return r
	}
	same, diff := run("uploads/a", "uploads/b"), run("uploads/a", "uploads/c")
	ReadFamilies(ctx, store, []*Run{same, diff})
	if got := same.Method(); got != "Co-RL same family (peer-ring)" {
		t.Errorf("two uploaded llamas: %q", got)
	}
	if got := diff.Method(); got != "Co-RL different family (peer-ring)" {
		t.Errorf("llama and gpt2: %q", got)
	}
	// A label the sweep gave (spec.method) is the method's name, whatever
	// the reward and the members would suggest.
	diff.Spec.Method = "Co-RL, anchored"
	if got := diff.Method(); got != "Co-RL, anchored" {
		t.Errorf("with spec.method: %q", got)
	}
}

// TestTableIntervalsHoldSeedVariance: five seeds of a method whose
// training outcome varies a lot between seeds (each seed solves a
// different share of the same problems) against a method equal to the
// base: the table's gain interval holds the seed variance (wider than
// bootstrapping problems after averaging the seeds, which it shows
// beside it), and every p is corrected for the table's tests (Holm's
// never below the raw p).
func TestTableIntervalsHoldSeedVariance(t *testing.T) {
	const n = 200
	greedy := func(right func(p int) bool) evaluate.Result {
		r := evaluate.Result{N: n, Correct: make([]bool, n), ByTask: map[string]float64{"mod": 0}}
		for p := range r.Correct {
			r.Correct[p] = right(p)
			if r.Correct[p] {
				r.PassAt1 += 1.0 / n
			}
		}
		r.ByTask["mod"] = r.PassAt1
		return r
	}
	base := greedy(func(p int) bool { return p%10 < 3 }) // 0.30
	run := func(mode string, seed uint64, after evaluate.Result) *Run {
		r := &Run{Spec: spec.Default()}
		r.Spec.Name, r.Spec.Seed, r.Spec.Reward.Mode = mode, seed, mode
		r.Spec.Members = []spec.Member{{Name: "a", Base: "base-a"}}
		r.Evals = []record.Eval{{Round: 0, Members: map[string]evaluate.Result{"a": base}},
			{Round: 5, Members: map[string]evaluate.Result{"a": after}}}
		return r
	}
	var rs []*Run
	for seed := uint64(1); seed <= 5; seed++ {
		// Seed s solves the base's problems and a seed-dependent share of
		// the others: from +0.0 to +0.4, mean +0.2.
		extra := int(seed - 1)
		rs = append(rs, run(rl.GroundTruthRL, seed, greedy(func(p int) bool { return p%10 < 3 || (p%10 >= 3 && p%10 < 3+extra) })))
		rs = append(rs, run(rl.SelfVote, seed, base))
	}
	tb := BuildTable(rs, "a")
	var gt *Row
	for i := range tb.Rows {
		if tb.Rows[i].Method == "Ground-truth" {
			gt = &tb.Rows[i]
		}
	}
	if gt == nil || gt.GreedyGain == nil || gt.GreedyGain.ProblemsOnly == nil {
		t.Fatalf("rows %+v", tb.Rows)
	}
	g := gt.GreedyGain
	if math.Abs(g.Diff.Mean-0.2) > 1e-9 || g.Seeds != [2]int{5, 5} {
		t.Errorf("gain %+v, want +0.2 over 5 seeds", g)
	}
	if w, wpo := g.Diff.Hi-g.Diff.Lo, g.ProblemsOnly.Hi-g.ProblemsOnly.Lo; w < 2*wpo || g.SeedShare < 0.5 {
		t.Errorf("seed-heavy gain: width %.3f against problems-only %.3f, seed share %.2f", w, wpo, g.SeedShare)
	}
	tests := 0
	for _, r := range tb.Rows {
		for _, p := range []*Paired{r.Gain, r.GreedyGain} {
			if p != nil {
				tests++
				if p.PHolm < p.P {
					t.Errorf("%s: Holm p %.3g below p %.3g", r.Method, p.PHolm, p.P)
				}
			}
		}
	}
	if tests == 0 || len(tb.Comparisons) != 1 || tb.Comparisons[0].Greedy.PHolm < tb.Comparisons[0].Greedy.P {
		t.Errorf("tests %d, comparisons %+v", tests, tb.Comparisons)
	}
	if !strings.Contains(g.String(), "Holm") {
		t.Errorf("gain shown as %q", g)
	}
}

// TestSweepReportReads: a report of 50 runs (ten methods, five seeds
// each, some with long names), rendered in headless Chromium: one line
// and one legend entry per method, not per run; the legend sits outside
// every plot; no text of a plot is cut off by its edges, and no legend
// entry is clipped. The page's geometry is measured by a script added to
// a copy of the page for the test (the report itself has none).
func TestSweepReportReads(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (make test-long installs it)")
	}
	modes := []string{rl.GroundTruthRL, rl.SelfVote, rl.Entropy, rl.SelfCertainty, rl.PeerRing}
	pair := []spec.Member{{Name: "llama-odd-3k", Base: "b1"}, {Name: "gpt2-even-3k", Base: "b2", View: 1}}
	var rs []*Run
	for m := 0; m < 10; m++ { // each mode alone and with a peer: ten methods
		members := []spec.Member{{Name: "llama-odd-3k", Base: "b1"}}
		if m >= len(modes) {
			members = pair
		}
		for seed := uint64(1); seed <= 5; seed++ {
			name := fmt.Sprintf("a-rather-long-sweep-cell-name-%02d", m)
			r, err := Load(fakeRun(t, name, modes[m%len(modes)], seed, members, 0.3, 0.3+0.01*float64(m)+0.005*float64(seed)))
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
	}
	page, err := HTML(rs, BuildTable(rs, "llama-odd-3k"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page, `<li><span class="swatch"`); n != 10 {
		t.Errorf("%d legend entries for 10 methods", n)
	}
	probe := `<script>
addEventListener("load", () => {
  const inside = (a, b) => a.left >= b.left - 1 && a.right <= b.right + 1 && a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
  const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const out = {plots: 0, lines: 0, overlaps: 0, cut: [], clipped: 0};
  const legends = [...document.querySelectorAll(".legend")].map(l => l.getBoundingClientRect());
  const names = new Set([...document.querySelectorAll(".legend li")].map(li => li.textContent.trim()));
  out.inPlot = 0;
  for (const svg of document.querySelectorAll("svg")) {
    out.plots++;
    const box = svg.getBoundingClientRect();
    for (const l of legends) if (overlap(l, box)) out.overlaps++;
    for (const t of svg.querySelectorAll("text")) {
      if (names.has(t.textContent.trim())) out.inPlot++; // a legend drawn over the plot
      const r = t.getBoundingClientRect();
      if (t.textContent.trim() && !inside(r, box)) out.cut.push(t.textContent + " " + JSON.stringify([r.left, r.top, r.right, r.bottom, box.left, box.top, box.right, box.bottom]));
    }
  }
  for (const li of document.querySelectorAll(".legend li")) if (li.scrollWidth > li.clientWidth + 1) out.clipped++;
  document.title = "probe:" + JSON.stringify(out);
});
</script></body>`
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	os.WriteFile(file, []byte(strings.Replace(page, "</body>", probe, 1)), 0o644)
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,1600",
		"--user-data-dir=" + filepath.Join(dir, "profile"), "--dump-dom", "file://" + file}
	dom, err := exec.Command(browser, args...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if shot := os.Getenv("CORL_REPORT_SCREENSHOT"); shot != "" { // to look at by eye
		view := append(args[:len(args)-2:len(args)-2], "--window-size=1200,4000", "--screenshot="+shot, "file://"+file)
		if out, err := exec.Command(browser, view...).CombinedOutput(); err != nil {
			t.Errorf("screenshot: %v\n%s", err, out)
		}
	}
	i := bytes.Index(dom, []byte("probe:"))
	if i < 0 {
		t.Fatalf("the probe did not run:\n%.2000s", dom)
	}
	end := bytes.Index(dom[i:], []byte("</title>"))
	var got struct {
		Plots, Overlaps, Clipped, InPlot int
		Cut                              []string
	}
	raw := strings.NewReplacer("&quot;", `"`, "&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(string(dom[i+len("probe:") : i+end]))
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("probe result %q: %v", raw, err)
	}
	t.Logf("%d plots; legend overlaps %d, cut labels %q, clipped legend entries %d", got.Plots, got.Overlaps, got.Cut, got.Clipped)
	if got.Plots < 10 || got.Overlaps != 0 || got.InPlot != 0 || len(got.Cut) != 0 || got.Clipped != 0 {
		t.Errorf("plots %d, legend over a plot %d times, legend entries inside plots %d, cut labels %q, clipped legend entries %d",
			got.Plots, got.Overlaps, got.InPlot, got.Cut, got.Clipped)
	}
}

// TestRecordsRedrawTheReport: the runs saved as records and read back (a
// results directory) give the same table, to the last digit, and the same
// page apart from its date; a damaged line is named.
func TestRecordsRedrawTheReport(t *testing.T) {
	rs := runs(t)
	dir := t.TempDir()
	if err := SaveRecords(filepath.Join(dir, RecordsName), rs); err != nil {
		t.Fatal(err)
	}
	back, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(BuildTable(rs, ""))
	got, _ := json.Marshal(BuildTable(back, ""))
	if !bytes.Equal(want, got) {
		t.Errorf("table from records:\n%s\nfrom the runs:\n%s", got, want)
	}
	a, err := HTML(rs, BuildTable(rs, ""))
	if err != nil {
		t.Fatal(err)
	}
	b, err := HTML(back, BuildTable(back, ""))
	if err != nil {
		t.Fatal(err)
	}
	stamp := regexp.MustCompile(`made \d{4}-\d\d-\d\d \d\d:\d\d UTC`)
	if stamp.ReplaceAllString(a, "") != stamp.ReplaceAllString(b, "") {
		t.Error("the page drawn from records differs")
	}
	for _, r := range back {
		if r.Dir != "" {
			t.Errorf("a record keeps the machine's path %q", r.Dir)
		}
	}
	bad := filepath.Join(t.TempDir(), RecordsName)
	f, _ := os.Create(bad)
	zw := gzip.NewWriter(f)
	zw.Write([]byte("{\"Spec\": 1}\n"))
	zw.Close()
	f.Close()
	if _, err := LoadRecords(bad); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a damaged record: %v", err)
	}
}

// TestDoseResponseFindsTheSlope: cohorts whose gain is 0.1 + 0.5 x kappa
// by construction give slope 0.5 on kappa, with an interval over the
// cohorts that holds it, in the table and its Markdown; shared-draw
// copies are left out; own-view predictors are read where recorded.
func TestDoseResponseFindsTheSlope(t *testing.T) {
	var rs []*Run
	for c := range 4 {
		members := []spec.Member{{Name: "a", Base: "b"}, {Name: "p", Base: fmt.Sprintf("peer%d", c)}}
		for _, seed := range []uint64{uint64(c%2) + 1, uint64(c%2) + 3} {
			kappa := 0.2 + float64(seed%5)/10 // fakeRun's round-0 kappa
			r, err := Load(fakeRun(t, fmt.Sprintf("co%d", c), rl.PeerRing, seed, members, 0.2, 0.2+0.1+0.5*kappa))
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
	}
	tab := BuildTable(rs, "a")
	var kappa *DoseResponse
	for i, d := range tab.DoseResponse {
		if d.Predictor == "kappa" {
			kappa = &tab.DoseResponse[i]
		}
	}
	if kappa == nil {
		t.Fatalf("no kappa dose-response in %+v", tab.DoseResponse)
	}
	f := kappa.Fit
	if math.Abs(f.Slope-0.5) > 1e-9 || f.Points != 8 || f.Clusters != 4 || f.CI == nil || f.CI.Lo > 0.5+1e-9 || f.CI.Hi < 0.5-1e-9 {
		t.Fatalf("kappa fit %+v (interval %+v), want slope 0.5 over 8 runs of 4 cohorts", f, f.CI)
	}
	if md := tab.Markdown(); !strings.Contains(md, "| kappa | +0.500 |") {
		t.Errorf("Markdown lacks the kappa slope:\n%s", md)
	}
	// An identical copy (a's own base) recorded before members sampled
	// apart: its pair's predictors are the model's own draws twice, so its
	// two runs are left out, counted, and the fit stays as it was, even
	// with a gain far off the line. Recorded with per-member seeds, the
	// same cohort is fitted.
	var copies []*Run
	for _, seed := range []uint64{1, 3} {
		r, err := Load(fakeRun(t, "copy", rl.PeerRing, seed, []spec.Member{{Name: "a", Base: "b"}, {Name: "p", Base: "b"}}, 0.2, 0.9))
		if err != nil {
			t.Fatal(err)
		}
		for i := range r.Evals {
			r.Evals[i].Schema = 0
		}
		copies = append(copies, r)
	}
	for i, d := range BuildTable(append(rs, copies...), "a").DoseResponse {
		if !reflect.DeepEqual(d.Fit, tab.DoseResponse[i].Fit) || d.SharedDraws != 2 {
			t.Errorf("%s with a shared-draws copy: fit %+v, %d left out; want %+v and 2", d.Predictor, d.Fit, d.SharedDraws, tab.DoseResponse[i].Fit)
		}
	}
	for _, r := range copies {
		for i := range r.Evals {
			r.Evals[i].Schema = record.Schema
		}
	}
	if d := BuildTable(append(rs, copies...), "a").DoseResponse[0]; d.Fit.Points != 10 || d.SharedDraws != 0 {
		t.Errorf("the copy with its own draws: %d runs fitted, %d left out; want 10 and 0", d.Fit.Points, d.SharedDraws)
	}
	if md := BuildTable(append(append([]*Run(nil), rs[:4]...), copies[0]), "a").Markdown(); strings.Contains(md, "left out") {
		t.Errorf("a run with its own draws counted as left out:\n%s", md)
	}
	// Measured with each member voting on its own view, the predictors
	// are read from there: kappa doubled there halves the slope.
	for _, r := range rs {
		r.Evals[0].PairsOwnView = map[string]record.PairPredictors{}
		for k, pp := range r.Evals[0].Pairs {
			pp.Kappa *= 2
			r.Evals[0].PairsOwnView[k] = pp
		}
	}
	for _, d := range BuildTable(rs, "a").DoseResponse {
		if d.Predictor == "kappa" && math.Abs(d.Fit.Slope-0.25) > 1e-9 {
			t.Errorf("kappa slope %v with own-view predictors, want 0.25", d.Fit.Slope)
		}
	}
}

// TestDoseResponseReadsTheScoredMembersSide: the peer's vote accuracy is
// the labeller's alone, whichever side of the pair the scored member is
// on (here the gain is 0.1 + 0.5 x the peer's accuracy while the scored
// member's own falls as it rises, so the two-member mean would not vary);
// a record without agreement is missing from that fit, not a 0; and in a
// three-member cohort the scored member's pairs with its labellers are
// read, the ring's one or the majority's every peer.
func TestDoseResponseReadsTheScoredMembersSide(t *testing.T) {
	var rs []*Run
	for c := range 4 {
		members := []spec.Member{{Name: "a", Base: "b"}, {Name: "p", Base: fmt.Sprintf("peer%d", c)}}
		if c%2 == 1 {
			members[0], members[1] = members[1], members[0] // the pair's key is "p/a"
		}
		for _, seed := range []uint64{uint64(c%2) + 1, uint64(c%2) + 3} {
			x := 0.2 + float64(seed%5)/10 + float64(c)/50
			r, err := Load(fakeRun(t, fmt.Sprintf("co%d", c), rl.PeerRing, seed, members, 0.2, 0.2+0.1+0.5*x))
			if err != nil {
				t.Fatal(err)
			}
			key := members[0].Name + "/" + members[1].Name
			pp := r.Evals[0].Pairs[key]
			if members[0].Name == "a" {
				pp.AccA, pp.AccB = 1-x, x
			} else {
				pp.AccA, pp.AccB = x, 1-x
			}
			if seed > 2 {
				pp.Agreement = nil // written before agreement was measured
			}
			r.Evals[0].Pairs[key] = pp
			rs = append(rs, r)
		}
	}
	fits := map[string]stats.Slope{}
	for _, d := range BuildTable(rs, "a").DoseResponse {
		fits[d.Predictor] = d.Fit
	}
	if f := fits["peer vote accuracy"]; math.Abs(f.Slope-0.5) > 1e-9 || f.Points != 8 {
		t.Errorf("peer vote accuracy fit %+v, want slope 0.5 over 8 runs", f)
	}
	if f := fits["vote agreement"]; f.Points != 4 {
		t.Errorf("vote agreement fit over %d runs, want the 4 that recorded it", f.Points)
	}

	acc := predictors[3].pick
	three := func(mode string) float64 {
		r := &Run{Spec: spec.Default()}
		r.Spec.Reward.Mode = mode
		r.Spec.Members = []spec.Member{{Name: "x"}, {Name: "a"}, {Name: "y"}}
		pp := map[string]record.PairPredictors{"x/a": {AccA: 0.7, AccB: 0.5}, "a/y": {AccA: 0.5, AccB: 0.1}, "x/y": {AccA: 0.9, AccB: 0.9}}
		v, ok := scoredPredictor(r, pp, []string{"a"}, acc)
		if !ok {
			t.Fatalf("%s: no predictor for a", mode)
		}
		return v
	}
	if v := three(rl.PeerRing); math.Abs(v-0.7) > 1e-12 {
		t.Errorf("three-member ring: a's peer accuracy %v, want its labeller x's 0.7", v)
	}
	if v := three(rl.PeerMajority); math.Abs(v-0.4) > 1e-12 {
		t.Errorf("three-member majority: a's peer accuracy %v, want the mean of x's and y's, 0.4", v)
	}
}

// TestDoseResponseUsesValidationPredictors: when every cohort run also
// measured its round-0 predictors on the validation split, the fit uses
// those (here kappa on validation = 2 x the test one, so the slope
// halves) and says so; when only some did, it uses the evaluation split's
// for all rather than mix the two.
func TestDoseResponseUsesValidationPredictors(t *testing.T) {
	build := func(every bool) Table {
		var rs []*Run
		for c := range 4 {
			members := []spec.Member{{Name: "a", Base: "b"}, {Name: "p", Base: fmt.Sprintf("peer%d", c)}}
			for _, seed := range []uint64{uint64(c%2) + 1, uint64(c%2) + 3} {
				kappa := 0.2 + float64(seed%5)/10
				r, err := Load(fakeRun(t, fmt.Sprintf("co%d", c), rl.PeerRing, seed, members, 0.2, 0.2+0.1+0.5*kappa))
				if err != nil {
					t.Fatal(err)
				}
				if every || c > 0 {
					r.Evals[0].PairsValidation = map[string]record.PairPredictors{}
					for k, pp := range r.Evals[0].Pairs {
						pp.Kappa *= 2
						r.Evals[0].PairsValidation[k] = pp
					}
				}
				rs = append(rs, r)
			}
		}
		return BuildTable(rs, "a")
	}
	kappaOf := func(tab Table) DoseResponse {
		for _, d := range tab.DoseResponse {
			if d.Predictor == "kappa" {
				return d
			}
		}
		t.Fatalf("no kappa dose-response in %+v", tab.DoseResponse)
		return DoseResponse{}
	}
	tab := build(true)
	if d := kappaOf(tab); math.Abs(d.Fit.Slope-0.25) > 1e-9 || d.Split != "validation" {
		t.Errorf("with validation predictors: slope %v split %q, want 0.25 on validation", d.Fit.Slope, d.Split)
	}
	if md := tab.Markdown(); !strings.Contains(md, "| kappa (validation) | +0.250 |") {
		t.Errorf("Markdown does not name the split:\n%s", md)
	}
	if d := kappaOf(build(false)); math.Abs(d.Fit.Slope-0.5) > 1e-9 || d.Split != "" {
		t.Errorf("with some runs lacking them: slope %v split %q, want 0.5 on the evaluation split", d.Fit.Slope, d.Split)
	}
}

// TestDistinctDropsRepeatedSpecs: a run read from two sources counts once.
func TestDistinctDropsRepeatedSpecs(t *testing.T) {
	rs := runs(t)
	kept, dropped := Distinct(append(append([]*Run(nil), rs...), rs[0], rs[2]))
	if dropped != 2 || len(kept) != len(rs) {
		t.Fatalf("kept %d dropped %d of %d+2", len(kept), dropped, len(rs))
	}
}

// TestStoreRecordsReadAsADirectory: the records a workflow writes to the
// store (record.WriteJSONL, blob.RecordsKey) are a local run's
// metrics.jsonl byte for byte, and FromStore reads them as Load reads the
// directory; "complete" marks a run that is done, and a run that wrote no
// records is blob.ErrNotFound (the report then reads its history).
func TestStoreRecordsReadAsADirectory(t *testing.T) {
	dir := fakeRun(t, "co", rl.PeerRing, 1, []spec.Member{{Name: "a", Base: "b"}, {Name: "c", Base: "b", View: 1}}, 0.2, 0.25)
	local, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	if err := record.WriteJSONL(&lines, local.Rounds, local.Evals); err != nil {
		t.Fatal(err)
	}
	file, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if lines.String() != string(file) {
		t.Fatalf("WriteJSONL gave\n%s\nthe run directory holds\n%s", lines.String(), file)
	}
	ctx := context.Background()
	store := blob.Local{Root: t.TempDir()}
	if _, err := FromStore(ctx, store, "wf-1"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a run without records: %v, want blob.ErrNotFound", err)
	}
	sj, _ := os.ReadFile(filepath.Join(dir, "spec.json"))
	store.Put(ctx, blob.RecordsKey("wf-1", "metrics.jsonl"), lines.Bytes())
	store.Put(ctx, blob.RecordsKey("wf-1", "spec.json"), sj)
	got, err := FromStore(ctx, store, "wf-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Dir != "store:wf-1" || got.Complete {
		t.Errorf("read %s, complete %v; want store:wf-1, not complete", got.Dir, got.Complete)
	}
	got.Dir = local.Dir
	if g, l := mustJSON(t, got), mustJSON(t, local); g != l {
		t.Errorf("from the store\n%s\nfrom the directory\n%s", g, l)
	}
	store.Put(ctx, blob.RecordsKey("wf-1", "complete"), []byte("wf-1\n"))
	if got, err := FromStore(ctx, store, "wf-1"); err != nil || !got.Complete {
		t.Errorf("with complete: %v, %v", got, err)
	}
	store.Put(ctx, blob.RecordsKey("wf-1", "metrics.jsonl"), []byte("{\"round\": {\"round\": 1}}\n{oops\n"))
	if _, err := FromStore(ctx, store, "wf-1"); err == nil || !strings.Contains(err.Error(), "metrics.jsonl line 2") {
		t.Errorf("a broken line: %v, want it named with its line", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
