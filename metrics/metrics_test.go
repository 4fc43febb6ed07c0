package metrics

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScrape: the served endpoint has corl's metrics and, once the tally
// scope reports (every second), the SDK's.
func TestScrape(t *testing.T) {
	r := New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := r.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Corl.Stage("wf-1", "g", "generate", 1.5, 2)
	r.Corl.Work("wf-1", "g", "generate", "generated", 100, 3e9)
	r.Corl.Round("wf-1", "g", 0.25, 1, 0.9)
	r.Corl.Holding(2)
	r.Corl.Agree("wf-1", "g/l", 0.95)
	r.Corl.Eval("wf-1", "g", 0.4, 0.45)
	r.Corl.Placed("wf-1", "g")
	r.SDK().WithTags(map[string]string{"task_queue": "corl"}).Counter("temporal_request").Inc(3)
	var (
		nilCorl *Corl
		body    string
	)
	nilCorl.Stage("x", "y", "z", 1, 1) // metrics off: no panic
	want := []string{
		`corl_stage_seconds_count{member="g",run="wf-1",stage="generate"} 1`,
		`corl_activity_retries_total{stage="generate"} 1`,
		`corl_tokens_total{kind="generated",member="g",run="wf-1"} 100`,
		`corl_flops_total{member="g",run="wf-1",stage="generate"} 3e+09`,
		`corl_reward_mean{member="g",run="wf-1"} 0.25`,
		`corl_pass_at_1{member="g",run="wf-1",wording="own_view"} 0.45`,
		`corl_member_placements_total{member="g",run="wf-1"} 1`,
		`corl_modal_answer_share{member="g",run="wf-1"} 0.9`,
		`corl_members_held 2`,
		`corl_vote_agreement{pair="g/l",run="wf-1"} 0.95`,
		`temporal_request_total{task_queue="corl"} 3`, // tally reports every second
		`go_goroutines`,
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if body = string(b); strings.Contains(body, `temporal_request_total{task_queue="corl"} 3`) {
			break
		}
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("scrape lacks %s", w)
		}
	}
}

// TestDashboardNamesCorlMetrics: every corl_ metric the Grafana dashboard
// queries is one corl exposes (the cluster test checks the Temporal ones
// against real scrapes), and a query that names no metric is refused.
func TestDashboardNamesCorlMetrics(t *testing.T) {
	names, err := DashboardMetrics(Dashboard)
	if err != nil {
		t.Fatal(err)
	}
	have := New().Corl.Names()
	n := 0
	for _, m := range names {
		if IsCorl(m) {
			n++
			if !slices.Contains(have, m) {
				t.Errorf("the dashboard queries %s, which corl does not expose (it has %v)", m, have)
			}
		}
	}
	if n < 10 {
		t.Errorf("the dashboard reads %d of corl's metrics: %v", n, names)
	}
	if _, err := DashboardMetrics([]byte(`{"panels": [{"title": "x", "targets": [{"expr": "sum(rate(5))"}]}]}`)); err == nil {
		t.Error("a query without a metric selector was accepted")
	}
	broken := strings.Replace(string(Dashboard), "corl_members_held{}", "corl_member_held{}", 1)
	if got, _ := DashboardMetrics([]byte(broken)); !slices.Contains(got, "corl_member_held") || slices.Contains(have, "corl_member_held") {
		t.Error("a misspelt metric would not be caught")
	}
}
