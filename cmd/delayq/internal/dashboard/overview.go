package dashboard

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/delayq/delayq"
)

// topicsPerPage bounds the topics one overview page lists.
const topicsPerPage = 100

// overviewData is the overview's.
type overviewData struct {
	Redis     *redisFacts
	Topics    topicsTable
	Schedules int // how many schedules there are; the navigation links to them when any
	Done      *doneNote
}

// topicsTable is the overview's table of topics, refreshed on its own.
type topicsTable struct {
	Rows  []topicRow
	Total int // topics in all
	Sort  string
	pager
	Now      time.Time
	Query    string // the sort and page, for the refresh
	DeadJobs int64  // dead jobs over all topics
	Charts   []chart
	Rates    bool // the rows have rates
}

// topicRow is a topic's row of the overview: its counts and, with charts, its recent rates.
type topicRow struct {
	delayq.TopicStats
	Rates *recentRates
}

// sorts are the overview's orders: each puts what needs a look first.
var sorts = map[string]func(a, b delayq.TopicStats) int{
	"name":     func(a, b delayq.TopicStats) int { return cmp.Compare(a.Name, b.Name) },
	"dead":     func(a, b delayq.TopicStats) int { return cmp.Compare(b.Dead, a.Dead) },
	"ready":    func(a, b delayq.TopicStats) int { return cmp.Compare(b.Ready, a.Ready) },
	"delayed":  func(a, b delayq.TopicStats) int { return cmp.Compare(b.Delayed, a.Delayed) },
	"reserved": func(a, b delayq.TopicStats) int { return cmp.Compare(b.Reserved, a.Reserved) },
	"oldest":   func(a, b delayq.TopicStats) int { return cmp.Compare(b.OldestReady, a.OldestReady) },
}

// overview is GET /: every topic's counts, a page at a time, and the Redis server's facts.
func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request, v *view) error {
	table, err := d.topicsTable(r)
	if err != nil {
		return err
	}
	ctx, cancel := d.storeContext(r)
	defer cancel()
	v.Title = "Overview"
	v.Data = overviewData{Redis: readRedisFacts(ctx, d.redis, d.mode), Topics: table, Schedules: d.countSchedules(ctx), Done: readDone(r)}
	d.render(w, http.StatusOK, "overview", v)
	return nil
}

// overviewTopics is GET /overview/topics: the overview's table alone, which the overview
// fetches every few seconds.
func (d *Dashboard) overviewTopics(w http.ResponseWriter, r *http.Request, _ *view) error {
	table, err := d.topicsTable(r)
	if err != nil {
		return err
	}
	d.render(w, http.StatusOK, "topics-rows", table)
	return nil
}

// topicsTable reads every topic's counts and returns the page ?sort= and ?page= ask for.
func (d *Dashboard) topicsTable(r *http.Request) (topicsTable, error) {
	ctx, cancel := d.storeContext(r)
	defer cancel()
	all, err := d.c.Topics(ctx)
	if err != nil {
		return topicsTable{}, err
	}
	t := topicsTable{Sort: r.URL.Query().Get("sort"), Total: len(all), Now: time.Now(), Charts: d.hist.overallCharts()}
	if sorts[t.Sort] == nil {
		t.Sort = "name"
	}
	slices.SortStableFunc(all, sorts[t.Sort])
	for _, s := range all {
		t.DeadJobs += s.Dead
	}
	var from, to int
	t.pager, from, to = paginate(r, len(all), topicsPerPage)
	for _, st := range all[from:to] {
		t.Rows = append(t.Rows, topicRow{TopicStats: st, Rates: d.hist.recent(st.Name)})
	}
	t.Rates = d.hist != nil
	t.Query = "sort=" + t.Sort + "&page=" + strconv.Itoa(t.Page)
	return t, nil
}

// countSchedules is how many schedules there are, from their names alone: each schedule holds
// its job's body. 0, logged, when they cannot be read, for the overview shows without its link
// to them rather than not at all.
func (d *Dashboard) countSchedules(ctx context.Context) int {
	names, err := d.c.ScheduleNames(ctx)
	if err != nil {
		d.log.Warn("dashboard: reading the schedules for the overview", "err", err)
	}
	return len(names)
}
