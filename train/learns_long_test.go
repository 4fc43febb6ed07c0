//go:build long

package train

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/cohort"
	"github.com/corl-project/corl/config"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/spec"
	"github.com/corl-project/corl/stats"
)

// TestGroundTruthRLLearns is examples/local.yaml (the zoo's small pair,
// llama-odd-small and gpt2-even-small) under ground truth. RL must raise
// each member's sampled pass@1 on held-out validation problems by a paired
// margin whose 95% interval excludes zero, and must not lower greedy pass@1
// by more than noise, so that RL which learns cannot silently break again
// (a sign flip, a stale log-prob, a learning rate that only adds noise).
// About four minutes on 2 cores; `make test-long` runs it.
func TestGroundTruthRLLearns(t *testing.T) {
	s, err := config.Load("../examples/local.yaml", func(string) string { return "" }, map[string]any{
		"reward.mode": "ground-truth", "output_dir": t.TempDir(),
		// The run's own evaluations are skipped (one problem); this test
		// scores bases and results itself, per problem, for a paired test.
		"eval.size": 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Members {
		s.Members[i].Base = filepath.Join("..", s.Members[i].Base)
	}
	held := *s
	held.Eval.Size, held.Eval.Split = 100, "validation"
	data, err := cohort.LoadData(&held)
	if err != nil {
		t.Fatal(err)
	}
	o := evaluate.OptionsFromSpec(&held)
	o.Samples = 8
	score := func(dir string) evaluate.Result {
		m, err := cohort.LoadMember(cpu.New(0), spec.Member{Name: "m"}, dir, false)
		if err != nil {
			t.Fatal(err)
		}
		res, err := evaluate.Run(m.Model, m.Tok, data.Eval, o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	bases := make([]evaluate.Result, len(s.Members))
	for i, mb := range s.Members {
		bases[i] = score(mb.Base)
	}
	if err := Local(context.Background(), cpu.New(0), s, Options{}, io.Discard); err != nil {
		t.Fatal(err)
	}
	for i, mb := range s.Members {
		base := bases[i]
		after := score(filepath.Join(s.OutputDir, s.Name, "checkpoints", blob.RoundName(s.Rounds), mb.Name))
		sampled, p := stats.PairedDiff(base.SampledScores(), after.SampledScores(), 1)
		greedy, _ := stats.PairedDiff(base.Scores(), after.Scores(), 1)
		t.Logf("%s, %d validation problems, %d rounds: sampled pass@1 %.3f -> %.3f (diff %+.3f [%+.3f, %+.3f], p %.3f); greedy %.3f -> %.3f (diff %+.3f [%+.3f, %+.3f])",
			mb.Name, len(data.Eval), s.Rounds, base.SampledPassAt1, after.SampledPassAt1, sampled.Mean, sampled.Lo, sampled.Hi, p,
			base.PassAt1, after.PassAt1, greedy.Mean, greedy.Lo, greedy.Hi)
		if sampled.Lo <= 0 {
			t.Errorf("%s: ground-truth RL did not raise sampled pass@1: %+.3f [%+.3f, %+.3f]", mb.Name, sampled.Mean, sampled.Lo, sampled.Hi)
		}
		if greedy.Hi < 0 {
			t.Errorf("%s: ground-truth RL lowered greedy pass@1: %+.3f [%+.3f, %+.3f]", mb.Name, greedy.Mean, greedy.Lo, greedy.Hi)
		}
	}
}
