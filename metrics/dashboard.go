package metrics

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Dashboard is the Grafana dashboard of corl's metrics and of the Temporal
// SDK's and services' (grafana-dashboard.json: Dashboards, Import; pick the
// Prometheus data source). Every metric in its queries is written as a
// selector, name{...} or name[...], so that DashboardMetrics can list them.
//
//go:embed grafana-dashboard.json
var Dashboard []byte

var selector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)[{\[]`)

// DashboardMetrics lists the metric names the dashboard's queries read,
// sorted, once each; a panel without a query or a query without a metric
// selector is an error.
func DashboardMetrics(dashboard []byte) ([]string, error) {
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dashboard, &d); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	var names []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			return nil, fmt.Errorf("dashboard: panel %q has no query", p.Title)
		}
		for _, t := range p.Targets {
			m := selector.FindAllStringSubmatch(t.Expr, -1)
			if len(m) == 0 {
				return nil, fmt.Errorf("dashboard: panel %q: query %q reads no metric selector", p.Title, t.Expr)
			}
			for _, s := range m {
				if !slices.Contains(names, s[1]) {
					names = append(names, s[1])
				}
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Names lists corl's own metrics as they are exposed: a histogram's
// _bucket, _sum and _count series too.
func (c *Corl) Names() []string {
	var names []string
	for _, col := range []prometheus.Collector{c.StageSeconds, c.Tokens, c.FLOPs, c.Reward, c.Labeled, c.PassAt1, c.Retries,
		c.Placements, c.Held, c.Modal, c.Agreement} {
		ch := make(chan *prometheus.Desc, 4)
		go func() { col.Describe(ch); close(ch) }()
		for d := range ch {
			if m := fqName.FindStringSubmatch(d.String()); m != nil {
				names = append(names, m[1])
				if _, ok := col.(*prometheus.HistogramVec); ok {
					names = append(names, m[1]+"_bucket", m[1]+"_sum", m[1]+"_count")
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// IsCorl says whether a metric name is one of corl's own (corl_...).
func IsCorl(name string) bool { return strings.HasPrefix(name, "corl_") }
