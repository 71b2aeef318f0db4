package metrics_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/dashboard"
	"github.com/delayq/delayq/cmd/delayq/internal/httpapi"
	"github.com/delayq/delayq/cmd/delayq/internal/metrics"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/middleware"
)

// The operator files checked here, from this package's directory.
const (
	dashboardFile  = "../../../../docs/grafana/delayq.json"
	alertsFile     = "../../../../docs/prometheus/alerts.yml"
	alertTestsFile = "../../../../docs/prometheus/alerts_test.yml"
)

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = []string{"job", "instance"}

// exposed maps each series name a scrape can return to its label names: a histogram's
// _bucket (with le), _sum and _count.
type exposed map[string][]string

// exposedSeries gathers the registry delayq server builds (internal/server: New and
// newAPI: Go and process collectors, package metrics, the HTTP API's collector of
// per-topic gauges, the web dashboard's counter), after every vector in it has a series, and
// adds the series of middleware.Metrics, which Go programs' Workers export.
func exposedSeries(t *testing.T) exposed {
	t.Helper()
	srv := redistest.Standalone(t)
	rdb := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := delayq.New(ctx, rdb, delayq.Config{Logger: logger})
	if err != nil {
		t.Fatalf("delayq.New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// The per-topic series of a topic Redis does not hold are dropped at each scrape, so every
	// label value is the name of a topic that exists.
	const topic = "emails"
	if _, err := c.Enqueue(ctx, topic, delayq.Spec{Body: []byte("x")}); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	rec := &recorder{Registry: reg}
	m := metrics.New(rec)
	if _, err := httpapi.New(httpapi.Config{Client: c, Metrics: m, Registry: reg, Redis: rdb, Logger: logger}); err != nil {
		t.Fatalf("httpapi.New: %v", err)
	}
	if _, err := dashboard.New(dashboard.Config{Client: c, Redis: rdb, Registerer: rec, Gatherer: reg, Logger: logger}); err != nil {
		t.Fatalf("dashboard.New: %v", err)
	}
	for _, col := range rec.collectors {
		exercise(t, col, topic)
	}
	got := exposed{}
	got.add(t, reg)

	workers := prometheus.NewRegistry()
	handler := middleware.Metrics(workers)(func(context.Context, *delayq.Job) error { return nil })
	if err := handler(ctx, &delayq.Job{Topic: topic}); err != nil {
		t.Fatal(err)
	}
	got.add(t, workers)
	return got
}

// add gathers g's families into e.
func (e exposed) add(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	for _, f := range families {
		var labels []string
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
		}
		name := f.GetName()
		e[name] = labels
		if f.GetType() == dto.MetricType_HISTOGRAM {
			e[name+"_bucket"] = append(slices.Clone(labels), "le")
			e[name+"_sum"] = labels
			e[name+"_count"] = labels
		}
	}
}

// recorder is a Registerer that remembers what it registers, so that the test can give every
// vector a series: a vector without one is not gathered.
type recorder struct {
	*prometheus.Registry
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registry.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// exercise gives the vector col a series whose every label is value.
func exercise(t *testing.T, col prometheus.Collector, value string) {
	t.Helper()
	// A vector refuses label values of the wrong count: try counts until one fits.
	with := func(get func(...string) error) {
		for n := range 10 {
			if get(slices.Repeat([]string{value}, n)...) == nil {
				return
			}
		}
		t.Fatalf("no label count fits the vector %T", col)
	}
	switch v := col.(type) {
	case *prometheus.CounterVec:
		with(func(lv ...string) error {
			c, err := v.GetMetricWithLabelValues(lv...)
			if err == nil {
				c.Inc()
			}
			return err
		})
	case *prometheus.GaugeVec:
		with(func(lv ...string) error {
			g, err := v.GetMetricWithLabelValues(lv...)
			if err == nil {
				g.Set(1)
			}
			return err
		})
	case *prometheus.HistogramVec:
		with(func(lv ...string) error {
			o, err := v.GetMetricWithLabelValues(lv...)
			if err == nil {
				o.Observe(0.01)
			}
			return err
		})
	default:
		t.Fatalf("the server registers a %T, which this test cannot give a series", col)
	}
}

// grafanaPanel is what the test reads of a dashboard panel.
type grafanaPanel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource *grafanaSource  `json:"datasource"`
	Targets    []grafanaTarget `json:"targets"`
	Panels     []grafanaPanel  `json:"panels"` // of a collapsed row
}

type grafanaSource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaTarget struct {
	RefID      string         `json:"refId"`
	Expr       string         `json:"expr"`
	Datasource *grafanaSource `json:"datasource"`
}

type grafanaInput struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	PluginID string `json:"pluginId"`
}

type grafanaDashboard struct {
	Inputs        []grafanaInput `json:"__inputs"`
	SchemaVersion int            `json:"schemaVersion"`
	Title         string         `json:"title"`
	UID           string         `json:"uid"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
			Datasource *grafanaSource  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

// readDashboard parses the dashboard and checks its structure: a Prometheus data source input,
// a datasource variable every query goes through, the job, instance and topic variables, and
// panels with unique ids that each have queries. It returns the dashboard's PromQL
// expressions, each named by where it is, and its label_values queries.
func readDashboard(t *testing.T) (exprs, variables map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s is not a dashboard's JSON: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 {
		t.Errorf("title %q, uid %q, schemaVersion %d: want a title, a uid and a current schema (36 or newer)", d.Title, d.UID, d.SchemaVersion)
	}
	if !slices.ContainsFunc(d.Inputs, func(in grafanaInput) bool {
		return in.Type == "datasource" && in.PluginID == "prometheus"
	}) {
		t.Errorf("__inputs has no Prometheus data source input: %+v", d.Inputs)
	}

	variables = map[string]string{}
	types := map[string]string{}
	for _, v := range d.Templating.List {
		types[v.Name] = v.Type
		switch v.Type {
		case "datasource":
			if string(v.Query) != `"prometheus"` {
				t.Errorf("variable %s chooses among %s data sources, want prometheus", v.Name, v.Query)
			}
		case "query":
			var q struct {
				Query string `json:"query"`
			}
			if json.Unmarshal(v.Query, &q) != nil {
				_ = json.Unmarshal(v.Query, &q.Query) // the older form: the query alone
			}
			if q.Query == "" || q.Query != v.Definition {
				t.Errorf("variable %s: query %q and definition %q, want the same query in both", v.Name, q.Query, v.Definition)
			}
			checkSource(t, "variable "+v.Name, v.Datasource)
			variables["variable "+v.Name] = q.Query
		}
	}
	for name, want := range map[string]string{"datasource": "datasource", "job": "query", "instance": "query", "topic": "query"} {
		if types[name] != want {
			t.Errorf("the dashboard's %s variable is of type %q, want %q", name, types[name], want)
		}
	}

	exprs = map[string]string{}
	ids := map[int]string{}
	var walk func([]grafanaPanel)
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			if other, ok := ids[p.ID]; ok || p.ID <= 0 {
				t.Errorf("panel %q has id %d, which is not positive or is also %q's", p.Title, p.ID, other)
			}
			ids[p.ID] = p.Title
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no queries", p.Title)
			}
			checkSource(t, "panel "+p.Title, p.Datasource)
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				where := fmt.Sprintf("panel %q query %s", p.Title, tg.RefID)
				if tg.RefID == "" || refs[tg.RefID] || strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("%s: want a refId unique in the panel and an expression", where)
				}
				refs[tg.RefID] = true
				checkSource(t, where, tg.Datasource)
				exprs[where] = tg.Expr
			}
		}
	}
	walk(d.Panels)
	if len(exprs) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	return exprs, variables
}

// checkSource checks that a query goes through the datasource variable.
func checkSource(t *testing.T, where string, s *grafanaSource) {
	t.Helper()
	if s == nil || s.Type != "prometheus" || s.UID != "${datasource}" {
		t.Errorf("%s: data source %+v, want the prometheus ${datasource}", where, s)
	}
}

func TestDashboardUsesExposedMetrics(t *testing.T) {
	exprs, variables := readDashboard(t)
	have := exposedSeries(t)
	for where, expr := range exprs {
		for _, p := range checkExpr(expr, have) {
			t.Errorf("%s: %s\n\t%s", where, p, expr)
		}
	}
	for where, q := range variables {
		for _, p := range checkLabelValues(q, have) {
			t.Errorf("%s: %s\n\t%s", where, p, q)
		}
	}
}

func TestAlertRulesUseExposedMetrics(t *testing.T) {
	exprs := alertExprs(t)
	have := exposedSeries(t)
	for where, expr := range exprs {
		for _, p := range checkExpr(expr, have) {
			t.Errorf("%s: %s\n\t%s", where, p, expr)
		}
	}
}

// TestAlertRules checks the rule file and runs its unit tests with promtool, which make test
// installs (scripts/ensure-promtool.sh). Outside CI a machine without it skips.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("promtool is not on PATH (make test installs it: scripts/ensure-promtool.sh)")
		}
		t.Fatalf("promtool is not on PATH, and CI needs it: %v", err)
	}
	for _, args := range [][]string{
		{"check", "rules", alertsFile},
		{"test", "rules", alertTestsFile},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// alertExprs reads the expr of every rule of the rule file, named by its alert.
func alertExprs(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	exprs, rules, err := ruleExprs(f)
	if err != nil {
		t.Fatal(err)
	}
	if rules == 0 || len(exprs) != rules {
		t.Fatalf("%s: read %d expressions of %d rules", alertsFile, len(exprs), rules)
	}
	return exprs
}

var (
	ruleLine = regexp.MustCompile(`^\s*- (alert|record):\s*(\S+)`)
	exprLine = regexp.MustCompile(`^(\s*)expr:\s*(.*)$`)
)

// ruleExprs reads the expressions of a Prometheus rule file, named by their rule, and counts
// its rules. It knows the YAML such files use: an expr on its line, quoted or not, or a
// block scalar (| or >) on the lines indented under it. promtool checks the rest.
func ruleExprs(r io.Reader) (exprs map[string]string, rules int, err error) {
	exprs = map[string]string{}
	var rule, indent string
	var block []string
	inBlock := false
	end := func() {
		if inBlock {
			exprs[rule] = strings.Join(block, "\n")
			inBlock, block = false, nil
		}
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if inBlock {
			if strings.TrimSpace(line) == "" || (strings.HasPrefix(line, indent+" ") && len(line) > len(indent)) {
				block = append(block, strings.TrimSpace(line))
				continue
			}
			end()
		}
		if m := ruleLine.FindStringSubmatch(line); m != nil {
			rules++
			rule = m[1] + " " + m[2]
			continue
		}
		m := exprLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if rule == "" {
			return nil, 0, fmt.Errorf("an expr before any rule: %q", line)
		}
		switch v := strings.TrimSpace(m[2]); {
		case strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">"):
			inBlock, indent = true, m[1]
		case strings.HasPrefix(v, `"`) || strings.HasPrefix(v, "'"):
			exprs[rule] = strings.Trim(v, `"'`)
		default:
			exprs[rule] = v
		}
	}
	end()
	return exprs, rules, sc.Err()
}

func TestRuleExprs(t *testing.T) {
	rules := `groups:
  - name: g
    rules:
      - alert: Block
        expr: |
          sum(a)

            > 1
        for: 5m
      - alert: Inline
        expr: b > 2
      - record: job:c:sum
        expr: "sum by (job) (c)"
      - alert: Missing
        labels: {}
`
	got, n, err := ruleExprs(strings.NewReader(rules))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"alert Block": "sum(a)\n\n> 1", "alert Inline": "b > 2", "record job:c:sum": "sum by (job) (c)"}
	if diff := cmp.Diff(want, got); diff != "" || n != 4 {
		t.Errorf("ruleExprs: %d rules, want 4; expressions (-want +got):\n%s", n, diff)
	}
}
