package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"
)

// Corl is the set of corl's own metrics. Label run is the workflow ID,
// member the member's name, stage one of generate, judge, grade, update,
// replay, checkpoint, evaluate, acquire.
type Corl struct {
	StageSeconds *prometheus.HistogramVec // run, member, stage
	Tokens       *prometheus.CounterVec   // run, member, kind (generated, trained)
	FLOPs        *prometheus.CounterVec   // run, member, stage
	Reward       *prometheus.GaugeVec     // run, member: mean reward of the latest graded round
	Labeled      *prometheus.GaugeVec     // run, member: labeled fraction of the latest round
	PassAt1      *prometheus.GaugeVec     // run, member, wording (original, own_view)
	Retries      *prometheus.CounterVec   // stage: activity attempts after the first
	Placements   *prometheus.CounterVec   // run, member: members loaded on this worker
	Held         prometheus.Gauge         // members this worker holds now
	Modal        *prometheus.GaugeVec     // run, member: share of the latest round's prompts voting the member's most common answer
	Agreement    *prometheus.GaugeVec     // run, pair: share of the latest round's prompts both members vote alike
}

// Registry is a process's metrics.
type Registry struct {
	reg   *prometheus.Registry
	Corl  *Corl
	scope tally.Scope
	close func() error
}

// New returns a registry with Go runtime, process, SDK and corl metrics.
func New() *Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	c := &Corl{
		StageSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "corl_stage_seconds",
			Help: "Seconds one member spent in a stage of a round (inside the activity).", Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)},
			[]string{"run", "member", "stage"}),
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "corl_tokens_total",
			Help: "Tokens generated (sampled) or trained on (forward and backward), per member."}, []string{"run", "member", "kind"}),
		FLOPs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "corl_flops_total",
			Help: "Floating-point operations spent, per member and stage."}, []string{"run", "member", "stage"}),
		Reward: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "corl_reward_mean",
			Help: "Mean reward of the member's samples in the latest graded round."}, []string{"run", "member"}),
		Labeled: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "corl_labeled_fraction",
			Help: "Share of the latest round's prompts that got a label for the member."}, []string{"run", "member"}),
		PassAt1: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "corl_pass_at_1",
			Help: "Greedy pass@1 at the latest evaluation, on the original wording or the member's own view."}, []string{"run", "member", "wording"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "corl_activity_retries_total",
			Help: "Activity attempts after the first, per stage."}, []string{"stage"}),
		Placements: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "corl_member_placements_total",
			Help: "Members loaded on this worker (a number above one per member means it moved here after a lost worker)."}, []string{"run", "member"}),
		Modal: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "corl_modal_answer_share",
			Help: "Share of the latest round's prompts whose vote is the member's most common answer (near 1: collapsed onto one answer)."}, []string{"run", "member"}),
		Agreement: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "corl_vote_agreement",
			Help: "Share of the latest round's prompts on which two members vote the same answer (near 1 with labels mostly wrong: consensus collapse)."}, []string{"run", "pair"}),
		Held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "corl_members_held",
			Help: "Members this worker holds now (released when their run ends, however it ends)."}),
	}
	reg.MustRegister(c.StageSeconds, c.Tokens, c.FLOPs, c.Reward, c.Labeled, c.PassAt1, c.Retries, c.Placements, c.Held, c.Modal, c.Agreement)
	reporter := tallyprom.NewReporter(tallyprom.Options{Registerer: reg})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{CachedReporter: reporter, Separator: tallyprom.DefaultSeparator,
		SanitizeOptions: &sdktally.PrometheusSanitizeOptions}, time.Second)
	return &Registry{reg: reg, Corl: c, scope: sdktally.NewPrometheusNamingScope(scope), close: closer.Close}
}

// SDK is the handler to give the Temporal client (client.Options.MetricsHandler)
// so that the SDK's worker and client metrics land in this registry.
func (r *Registry) SDK() client.MetricsHandler { return sdktally.NewMetricsHandler(r.scope) }

// Handler serves the registry in the Prometheus text format.
func (r *Registry) Handler() http.Handler { return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{}) }

// Open is a registry serving at addr (see Serve), whose address is told to
// w; nil with no error when addr is empty (metrics off).
func Open(ctx context.Context, addr string, w io.Writer) (*Registry, error) {
	if addr == "" {
		return nil, nil
	}
	r := New()
	at, err := r.Serve(ctx, addr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "Prometheus metrics at http://%s/metrics\n", at)
	return r, nil
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves
// /metrics until ctx ends. It returns the address it listens on.
func (r *Registry) Serve(ctx context.Context, addr string) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", r.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
		r.close()
	}()
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("metrics server:", err)
		}
	}()
	return l.Addr().String(), nil
}

// The recorders below do nothing on a nil *Corl (metrics off).

// Stage records a member's seconds in a stage and, past the first attempt,
// a retry.
func (c *Corl) Stage(run, member, stage string, seconds float64, attempt int32) {
	if c == nil {
		return
	}
	c.StageSeconds.WithLabelValues(run, member, stage).Observe(seconds)
	if attempt > 1 {
		c.Retries.WithLabelValues(stage).Inc()
	}
}

// Work adds tokens (kind generated or trained) and FLOPs spent in a stage.
func (c *Corl) Work(run, member, stage, kind string, tokens int, flops float64) {
	if c == nil {
		return
	}
	c.Tokens.WithLabelValues(run, member, kind).Add(float64(tokens))
	c.FLOPs.WithLabelValues(run, member, stage).Add(flops)
}

// Round sets a member's latest mean reward, labeled fraction and modal
// answer share.
func (c *Corl) Round(run, member string, reward, labeled, modal float64) {
	if c == nil {
		return
	}
	c.Reward.WithLabelValues(run, member).Set(reward)
	c.Labeled.WithLabelValues(run, member).Set(labeled)
	c.Modal.WithLabelValues(run, member).Set(modal)
}

// Agree sets how often two members (pair "a/b") voted alike in the
// latest round.
func (c *Corl) Agree(run, pair string, agreement float64) {
	if c == nil {
		return
	}
	c.Agreement.WithLabelValues(run, pair).Set(agreement)
}

// Eval sets a member's latest pass@1 on the original wording and its own view.
func (c *Corl) Eval(run, member string, original, ownView float64) {
	if c == nil {
		return
	}
	c.PassAt1.WithLabelValues(run, member, "original").Set(original)
	c.PassAt1.WithLabelValues(run, member, "own_view").Set(ownView)
}

// Holding sets how many members this worker holds.
func (c *Corl) Holding(n int) {
	if c == nil {
		return
	}
	c.Held.Set(float64(n))
}

// Placed counts a member loaded on this worker.
func (c *Corl) Placed(run, member string) {
	if c == nil {
		return
	}
	c.Placements.WithLabelValues(run, member).Inc()
}
