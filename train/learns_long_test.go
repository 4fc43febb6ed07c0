//go:build long

package train

import (
	"context"
	"io"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/corl-project/corl/config"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/stats"
)

// TestGroundTruthRLLearns is examples/ground-truth.yaml cut short: its
// base, data and settings, fewer rounds. Ground-truth RL must raise the
// base's sampled pass@1 on held-out validation problems by a paired margin
// whose 95% interval excludes zero, and must not lower greedy pass@1 by
// more than noise, so that RL which learns cannot silently break again
// (a sign flip, a stale log-prob, a learning rate that only adds noise).
// About three minutes on 2 cores; `make test-long` runs it.
func TestGroundTruthRLLearns(t *testing.T) {
	const rounds = 24
	s, err := config.Load("../examples/ground-truth.yaml", func(string) string { return "" }, map[string]any{
		"rounds": rounds, "output_dir": t.TempDir(),
		// The run's own evaluations are skipped (one problem); this test
		// scores base and result itself, per problem, for a paired test.
		"eval.size": 1, "eval.every": rounds, "checkpoint.every": rounds,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Members {
		s.Members[i].Base = filepath.Join("..", s.Members[i].Base)
	}
	held := *s
	held.Eval.Size, held.Eval.Split = 100, "validation"
	data, err := LoadData(&held)
	if err != nil {
		t.Fatal(err)
	}
	o := config.EvalOptions(&held)
	o.Samples = 8
	score := func(dir string) evaluate.Result {
		m, err := LoadMember(cpu.New(0), "m", dir, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		res, err := evaluate.Run(m.Model, m.Tok, data.Eval, o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	base := score(s.Members[0].Base)
	if err := Local(context.Background(), cpu.New(0), s, Options{}, io.Discard); err != nil {
		t.Fatal(err)
	}
	after := score(filepath.Join(s.OutputDir, s.Name, "checkpoints", "round-"+strconv.Itoa(rounds), s.Members[0].Name))
	sampled, p := stats.PairedDiff(base.SampledScores(), after.SampledScores(), 1)
	greedy, _ := stats.PairedDiff(base.Scores(), after.Scores(), 1)
	t.Logf("%d validation problems, %d rounds: sampled pass@1 %.3f -> %.3f (diff %+.3f [%+.3f, %+.3f], p %.3f); greedy %.3f -> %.3f (diff %+.3f [%+.3f, %+.3f])",
		len(data.Eval), rounds, base.SampledPassAt1, after.SampledPassAt1, sampled.Mean, sampled.Lo, sampled.Hi, p,
		base.PassAt1, after.PassAt1, greedy.Mean, greedy.Lo, greedy.Hi)
	if sampled.Lo <= 0 {
		t.Errorf("ground-truth RL did not raise sampled pass@1: %+.3f [%+.3f, %+.3f]", sampled.Mean, sampled.Lo, sampled.Hi)
	}
	if greedy.Hi < 0 {
		t.Errorf("ground-truth RL lowered greedy pass@1: %+.3f [%+.3f, %+.3f]", greedy.Mean, greedy.Lo, greedy.Hi)
	}
}
