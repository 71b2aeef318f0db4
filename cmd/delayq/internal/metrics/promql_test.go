package metrics_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The names checks of the dashboard's and the alerts' PromQL: a small scanner that finds the
// metrics, matchers and grouping labels of an expression, which is all the checks need.

// A selector is a metric name with the label names its matchers use.
type selector struct {
	metric string
	labels []string
}

// promqlWords are PromQL's keywords: neither metrics nor functions.
var promqlWords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true, "inf": true, "nan": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// promqlAggregations may have their by or without clause before their parenthesis.
var promqlAggregations = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
	"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
}

type promqlToken struct {
	kind   byte // 'i' an identifier, '{' a matcher block, '(' and ')', 'o' anything else
	text   string
	labels []string // of a matcher block
}

var (
	promqlStrings = regexp.MustCompile("\"(\\\\.|[^\"\\\\])*\"|'(\\\\.|[^'\\\\])*'|`[^`]*`")
	promqlString  = regexp.MustCompile("^(" + promqlStrings.String() + ")")
	promqlIdent   = regexp.MustCompile(`^[A-Za-z_:][A-Za-z0-9_:]*`)
	promqlNumber  = regexp.MustCompile(`^[0-9.][0-9A-Za-z._]*`)
	promqlVar     = regexp.MustCompile(`^\$(\{[^}]*\}|[A-Za-z0-9_]+)`)
	promqlMatcher = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)`)
)

// lexPromQL splits expr, which may hold Grafana's $variables, into the tokens scanPromQL
// needs; ranges in brackets are dropped.
func lexPromQL(expr string) ([]promqlToken, error) {
	var toks []promqlToken
	for s := expr; s != ""; {
		switch c := s[0]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s = s[1:]
		case c == '"' || c == '\'' || c == '`':
			m := promqlString.FindString(s)
			if m == "" {
				return nil, fmt.Errorf("an unterminated string at %q", s)
			}
			toks, s = append(toks, promqlToken{kind: 'o', text: m}), s[len(m):]
		case c == '$':
			m := promqlVar.FindString(s)
			if m == "" {
				return nil, fmt.Errorf("a bad variable at %q", s)
			}
			toks, s = append(toks, promqlToken{kind: 'o', text: m}), s[len(m):]
		case c == '[' || c == '{':
			closing := map[byte]byte{'[': ']', '{': '}'}[c]
			// Strings may hold the closing character; they are blanked before looking for it.
			blank := promqlStrings.ReplaceAllStringFunc(s[1:], func(str string) string { return strings.Repeat("_", len(str)) })
			end := strings.IndexByte(blank, closing)
			if end < 0 {
				return nil, fmt.Errorf("no %c after %q", closing, s)
			}
			tok := promqlToken{kind: 'o', text: s[:end+2]}
			if c == '{' {
				tok.kind = '{'
				for _, m := range promqlMatcher.FindAllStringSubmatch(blank[:end], -1) {
					tok.labels = append(tok.labels, m[1])
				}
			}
			toks, s = append(toks, tok), s[end+2:]
		case c == '(' || c == ')':
			toks, s = append(toks, promqlToken{kind: c, text: s[:1]}), s[1:]
		case promqlIdent.MatchString(s):
			m := promqlIdent.FindString(s)
			toks, s = append(toks, promqlToken{kind: 'i', text: m}), s[len(m):]
		case promqlNumber.MatchString(s):
			m := promqlNumber.FindString(s)
			toks, s = append(toks, promqlToken{kind: 'o', text: m}), s[len(m):]
		default:
			toks, s = append(toks, promqlToken{kind: 'o', text: s[:1]}), s[1:]
		}
	}
	return toks, nil
}

// scanPromQL finds expr's selectors and the labels of its by, without, on and ignoring
// clauses.
func scanPromQL(expr string) (sels []selector, grouping []string, err error) {
	toks, err := lexPromQL(expr)
	if err != nil {
		return nil, nil, err
	}
	next := func(i int) promqlToken {
		if i+1 < len(toks) {
			return toks[i+1]
		}
		return promqlToken{}
	}
	for i := 0; i < len(toks); i++ {
		tk := toks[i]
		if tk.kind == '{' {
			// A metric's matchers are taken with it below.
			return nil, nil, fmt.Errorf("a selector without a metric name: %s", tk.text)
		}
		if tk.kind != 'i' {
			continue
		}
		n := next(i)
		switch {
		case promqlWords[tk.text]:
			if n.kind == '(' && tk.text != "atan2" {
				for i += 2; i < len(toks) && toks[i].kind != ')'; i++ {
					if toks[i].kind == 'i' {
						grouping = append(grouping, toks[i].text)
					}
				}
			}
		case n.kind == '(':
			// A function or an aggregation.
		case promqlAggregations[tk.text] && n.kind == 'i' && (n.text == "by" || n.text == "without"):
		default:
			sel := selector{metric: tk.text}
			if n.kind == '{' {
				sel.labels = n.labels
				i++
			}
			sels = append(sels, sel)
		}
	}
	return sels, grouping, nil
}

// checkExpr returns what is wrong with expr: a metric that is not exposed, a matcher on a
// label its metric does not have, a grouping by a label none of its series has.
func checkExpr(expr string, have exposed) []string {
	sels, grouping, err := scanPromQL(expr)
	if err != nil {
		return []string{err.Error()}
	}
	if len(sels) == 0 {
		return []string{"no metric"}
	}
	var problems []string
	all := slices.Clone(targetLabels)
	for _, s := range sels {
		labels, ok := have[s.metric]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is not a series delayq exposes", s.metric))
			continue
		}
		all = append(all, labels...)
		for _, l := range s.labels {
			if !slices.Contains(labels, l) && !slices.Contains(targetLabels, l) {
				problems = append(problems, fmt.Sprintf("%s has no label %s (it has %v)", s.metric, l, labels))
			}
		}
	}
	for _, l := range grouping {
		if !slices.Contains(all, l) {
			problems = append(problems, fmt.Sprintf("grouping by %s, which none of its series has", l))
		}
	}
	return problems
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)$`)

// checkLabelValues returns what is wrong with a Grafana variable's query,
// label_values(selector, label).
func checkLabelValues(q string, have exposed) []string {
	m := labelValues.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return []string{"want label_values(metric{...}, label)"}
	}
	problems := checkExpr(m[1], have)
	sels, _, err := scanPromQL(m[1])
	if err == nil && len(sels) == 1 {
		labels := append(slices.Clone(targetLabels), have[sels[0].metric]...)
		if !slices.Contains(labels, m[2]) {
			problems = append(problems, fmt.Sprintf("%s has no label %s", sels[0].metric, m[2]))
		}
	}
	return problems
}

func TestCheckExpr(t *testing.T) {
	have := exposed{
		"delayq_jobs":                             {"topic", "state"},
		"delayq_jobs_enqueued_total":              {"topic"},
		"delayq_store_up":                         nil,
		"delayq_delivery_lateness_seconds_bucket": {"mode", "le"},
	}
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`sum(rate(delayq_jobs_enqueued_total{job=~"$job", topic=~"$topic"}[$__rate_interval]))`, nil},
		{`histogram_quantile(0.99, sum by (mode, le) (rate(delayq_delivery_lateness_seconds_bucket{instance=~"$instance"}[5m]))) > 10`, nil},
		{"max by (job, topic) (delta(delayq_jobs{state=\"dead\", topic!~\"a}b\"}[15m])) > 0 and on (job) delayq_store_up == 1", nil},
		{`sum without (instance) (delayq_jobs offset 5m) / ignoring (state) group_left sum(delayq_jobs)`, nil},
		{`rate(delayq_jobs_lost_total[5m])`, []string{"delayq_jobs_lost_total is not a series delayq exposes"}},
		{`histogram_quantile(0.5, rate(delayq_delivery_lateness_seconds[5m]))`, []string{"delayq_delivery_lateness_seconds is not a series delayq exposes"}},
		{`delayq_jobs{queue="x"}`, []string{"delayq_jobs has no label queue (it has [topic state])"}},
		{`sum by (queue) (delayq_jobs)`, []string{"grouping by queue, which none of its series has"}},
		{`sum by (le) (delayq_jobs)`, []string{"grouping by le, which none of its series has"}},
		{`{topic="x"}`, []string{`a selector without a metric name: {topic="x"}`}},
		{`count(delayq_jobs{topic="x"`, []string{`no } after "{topic=\"x\""`}},
		{`vector(1)`, []string{"no metric"}},
	} {
		if diff := cmp.Diff(c.want, checkExpr(c.expr, have)); diff != "" {
			t.Errorf("checkExpr(%s) (-want +got):\n%s", c.expr, diff)
		}
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{`label_values(delayq_jobs{job=~"$job"}, topic)`, nil},
		{`label_values(delayq_store_up, instance)`, nil},
		{`label_values(delayq_store_up, topic)`, []string{"delayq_store_up has no label topic"}},
		{`label_values(topic)`, []string{"want label_values(metric{...}, label)"}},
	} {
		if diff := cmp.Diff(c.want, checkLabelValues(c.query, have)); diff != "" {
			t.Errorf("checkLabelValues(%s) (-want +got):\n%s", c.query, diff)
		}
	}
}
