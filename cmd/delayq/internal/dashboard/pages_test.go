package dashboard

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/core"
)

func TestOverviewShowsTopicsAndRedis(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	wantStatus(t, "empty overview", s.get("/"), http.StatusOK)
	resp, err := http.Post(s.url+"/v1/topics/orders/jobs", "application/json", strings.NewReader(`{"body":{"n":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s.bury("mail", "m1")
	a := s.get("/")
	wantStatus(t, "overview", a, http.StatusOK)
	for _, want := range []string{`data-topic="orders"`, `data-topic="mail"`, `class="dead" href="/topics/mail?state=dead">1</a>`,
		"standalone", "Version", "Memory", `hx-get="/overview/topics?sort=name&amp;page=1"`} {
		if !strings.Contains(a.body, want) {
			t.Errorf("overview lacks %q:\n%s", want, a.body)
		}
	}
	part := s.get("/overview/topics?sort=dead")
	wantStatus(t, "topics table", part, http.StatusOK)
	if strings.Contains(part.body, "<html") || strings.Index(part.body, `"mail"`) > strings.Index(part.body, `"orders"`) {
		t.Errorf("the table alone, sorted by dead jobs, is not:\n%s", part.body)
	}
}

func TestOverviewPagesTopics(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	for i := range topicsPerPage + 5 {
		s.enqueue(fmt.Sprintf("t%03d", i), delayq.Spec{})
	}
	first, second := s.get("/"), s.get("/?page=2")
	if strings.Count(first.body, "data-topic=") != topicsPerPage || !strings.Contains(first.body, `rel="next"`) {
		t.Errorf("page 1 lists %d topics", strings.Count(first.body, "data-topic="))
	}
	if strings.Count(second.body, "data-topic=") != 5 || !strings.Contains(second.body, `data-topic="t104"`) {
		t.Errorf("page 2 lists %d topics", strings.Count(second.body, "data-topic="))
	}
}

func TestTopicListsJobsByStateWithPaging(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	for i := range jobsPerPage + 3 {
		s.enqueue("t", delayq.Spec{ID: fmt.Sprintf("j%03d", i), Delay: time.Hour + time.Duration(jobsPerPage-i)*time.Second})
	}
	a := s.get("/topics/t?state=delayed")
	wantStatus(t, "delayed", a, http.StatusOK)
	rows := strings.Count(a.body, `<tr data-id=`)
	// By due time: the last enqueued is due first.
	if rows != jobsPerPage || strings.Index(a.body, `data-id="j052"`) > strings.Index(a.body, `data-id="j051"`) {
		t.Fatalf("first page: %d rows, or not by due time", rows)
	}
	next := regexpFind(t, a.body, `href="(/topics/t\?state=delayed&amp;cursor=[^"]+)" rel="next"`)
	b := s.get(strings.ReplaceAll(next, "&amp;", "&"))
	if n := strings.Count(b.body, `<tr data-id=`); n != 3 || !strings.Contains(b.body, `data-id="j000"`) {
		t.Errorf("second page has %d rows:\n%s", n, b.body)
	}
	for _, bad := range []string{"/topics/t?state=stuck", "/topics/t?state=ready&cursor=x!"} {
		wantStatus(t, bad, s.get(bad), http.StatusBadRequest)
	}
	wantStatus(t, "unknown topic", s.get("/topics/nope"), http.StatusNotFound)
}

func TestSearchFindsAJobByID(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("a", delayq.Spec{ID: "x-1"})
	s.enqueue("b", delayq.Spec{ID: "x-2"})
	s.enqueue("c", delayq.Spec{ID: "x-2"})
	one := s.get("/search?q=x-1")
	if one.status != http.StatusSeeOther || one.header.Get("Location") != "/topics/a/jobs/x-1" {
		t.Errorf("one match: %d %q", one.status, one.header.Get("Location"))
	}
	two := s.get("/search?q=x-2")
	if !strings.Contains(two.body, "2 job(s)") || !strings.Contains(two.body, `href="/topics/c/jobs/x-2"`) {
		t.Errorf("two matches:\n%s", two.body)
	}
	none := s.get("/search?q=x-3&topic=a")
	if !strings.Contains(none.body, "0 job(s)") || !strings.Contains(none.body, "in 1 topic(s)") {
		t.Errorf("no match in one topic:\n%s", none.body)
	}
}

func TestJobPageShowsEveryField(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("t", delayq.Spec{ID: "j", Body: []byte(`{"a":[1,2]}`), Format: delayq.FormatJSON, Priority: 7, Delay: time.Hour,
		Headers: map[string]string{"X-Tenant": "<acme>", "traceparent": "00-ab"}})
	s.enqueue("t", delayq.Spec{ID: "bin", Body: []byte{0, 1, 2, 0xff}})
	a := s.get("/topics/t/jobs/j")
	wantStatus(t, "job", a, http.StatusOK)
	for _, want := range []string{`id="state">delayed`, "{\n  &#34;a&#34;: [\n    1,", "<dt>Priority</dt><dd>7</dd>", "<dt>TTR</dt><dd>30000 ms", `id="run-now"`, `id="cancel"`,
		`<dd id="headers"><div><span class="id">traceparent</span>: 00-ab</div><div><span class="id">x-tenant</span>: &lt;acme&gt;</div></dd>`} {
		if !strings.Contains(a.body, want) {
			t.Errorf("job page lacks %q:\n%s", want, a.body)
		}
	}
	b := s.get("/topics/t/jobs/bin")
	if strings.Contains(b.body, `id="headers"`) {
		t.Errorf("a job without headers shows them:\n%s", b.body)
	}
	if !strings.Contains(b.body, "AAEC/w==") || !strings.Contains(b.body, "00 01 02 ff") {
		t.Errorf("binary body not as base64 and hex:\n%s", b.body)
	}
	wantStatus(t, "no such job", s.get("/topics/t/jobs/nope"), http.StatusNotFound)
}

// A job put over the beanstalkd protocol shows its beanstalkd priority; others do not.
func TestJobPageShowsABeanstalkdPriority(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	if err := s.client.Core(core.Pass).EnqueueRanked(context.Background(), "tube", core.RankedJob{
		ID: "00000000000000000001", Body: []byte("x"), Pri: 4294967295, TTR: time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	s.enqueue("tube", delayq.Spec{ID: "http", Body: []byte("y")})
	if a := s.get("/topics/tube/jobs/00000000000000000001"); !strings.Contains(a.body, `<dd id="beanstalkd-priority">4294967295</dd>`) {
		t.Errorf("job page lacks the beanstalkd priority:\n%s", a.body)
	}
	if a := s.get("/topics/tube/jobs/http"); strings.Contains(a.body, "beanstalkd-priority") {
		t.Errorf("a job enqueued over HTTP shows a beanstalkd priority:\n%s", a.body)
	}
}

// A job put over the beanstalkd protocol has no retry limit, and its page says so rather than
// counting its attempts against a limit of 2^31-1.
func TestJobPageShowsNoRetryLimitForABeanstalkdJob(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	if err := s.client.Core(core.Pass).EnqueueRanked(context.Background(), "tube", core.RankedJob{
		ID: "00000000000000000001", Body: []byte("x"), Pri: 10, TTR: time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	s.enqueue("tube", delayq.Spec{ID: "http", Body: []byte("y"), MaxRetries: 3})
	a := s.get("/topics/tube/jobs/00000000000000000001")
	if !strings.Contains(a.body, "<dt>Attempts</dt><dd>0, no retry limit</dd>") || strings.Contains(a.body, "2147483647") {
		t.Errorf("the beanstalkd job's page does not say it has no retry limit:\n%s", a.body)
	}
	if a := s.get("/topics/tube/jobs/http"); !strings.Contains(a.body, "<dt>Attempts</dt><dd>0 of 3 retries + 1</dd>") {
		t.Errorf("the page of a job with a retry limit does not count against it:\n%s", a.body)
	}
}

// A job's page shows the snoozes it took, against its limit or saying it has none.
func TestJobPageShowsSnoozes(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("t", delayq.Spec{ID: "limited", Body: []byte("x"), MaxSnoozes: 3})
	s.enqueue("t", delayq.Spec{ID: "free", Body: []byte("y")})
	ctx := context.Background()
	jobs, err := s.client.Reserve(ctx, "t", delayq.ReserveOptions{Max: 2})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("reserve: %d jobs, %v", len(jobs), err)
	}
	d := time.Hour
	for _, j := range jobs {
		if _, err := s.client.Release(ctx, j.Lease(), delayq.ReleaseOptions{Delay: &d}); err != nil {
			t.Fatal(err)
		}
	}
	if a := s.get("/topics/t/jobs/limited"); !strings.Contains(a.body, `<dd id="snoozes">1 of at most 3</dd>`) {
		t.Errorf("the page of a job with a snooze limit:\n%s", a.body)
	}
	if a := s.get("/topics/t/jobs/free"); !strings.Contains(a.body, `<dd id="snoozes">1, no limit</dd>`) {
		t.Errorf("the page of a job without a snooze limit:\n%s", a.body)
	}
}

// A job's page shows how long its id stays taken once it ends, and how often it was replaced;
// a job without either shows neither.
func TestJobPageShowsUniqueForAndReplaces(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	for range 3 {
		s.enqueue("t", delayq.Spec{ID: "debounced", Delay: time.Hour, UniqueFor: 24 * time.Hour, OnConflict: delayq.ConflictReplace})
	}
	s.enqueue("t", delayq.Spec{ID: "plain", Delay: time.Hour})
	a := s.get("/topics/t/jobs/debounced")
	wantContains(t, "the page of a replaced job", a.body, `<dd id="unique-for">24h: its id stays taken this long once it ends</dd>`,
		`<dd id="replaces">twice, last at 20`)
	if b := s.get("/topics/t/jobs/plain"); strings.Contains(b.body, `id="unique-for"`) || strings.Contains(b.body, `id="replaces"`) {
		t.Errorf("a job without unique_for or replaces shows them:\n%s", b.body)
	}
}

// While a job that ended keeps its id taken, its page says how and when it ended instead of
// 404, with no body and no actions; a search of its id finds it, and its body is not found.
func TestJobPageShowsAnEndedJobThatKeepsItsID(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.enqueue("t", delayq.Spec{ID: "done", Body: []byte("x"), UniqueFor: time.Hour})
	ctx := context.Background()
	jobs, err := s.client.Reserve(ctx, "t", delayq.ReserveOptions{Max: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("reserve: %d jobs, %v", len(jobs), err)
	}
	if err := s.client.Ack(ctx, jobs[0].Lease()); err != nil {
		t.Fatal(err)
	}
	a := s.get("/topics/t/jobs/done")
	wantStatus(t, "an ended job that keeps its id", a, http.StatusOK)
	wantContains(t, "the page of an ended job", a.body, `id="state">ended`, `<span class="state acked" id="outcome">acked</span>`,
		`<dd id="ended-at">20`, `id="ended-note"`)
	for _, not := range []string{"<h2>Body", `id="cancel"`, `id="run-now"`, `id="gone"`} {
		if strings.Contains(a.body, not) {
			t.Errorf("the page of an ended job has %q:\n%s", not, a.body)
		}
	}
	if found := s.get("/search?q=done"); found.status != http.StatusSeeOther || found.header.Get("Location") != "/topics/t/jobs/done" {
		t.Errorf("a search of the ended job's id: %d %q", found.status, found.header.Get("Location"))
	}
	body := s.get("/topics/t/jobs/done/body")
	wantStatus(t, "the body of an ended job", body, http.StatusNotFound)
	wantContains(t, "the body of an ended job", body.body, "acked at ")
}

func TestAssetsAreCached(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	page := s.get("/")
	css := regexpFind(t, page.body, `href="(/assets/dashboard\.[0-9a-f]{10}\.css)"`)
	js := regexpFind(t, page.body, `src="(/assets/htmx\.min\.[0-9a-f]{10}\.js)"`)
	for _, p := range []string{css, js} {
		a := s.get(p)
		if a.status != http.StatusOK || a.header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("GET %s: %d, Cache-Control %q", p, a.status, a.header.Get("Cache-Control"))
		}
	}
	if a := s.get(js); !strings.HasPrefix(a.body, "/*! htmx 2.0.4") || a.header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Errorf("htmx: %q, %.40q", a.header.Get("Content-Type"), a.body)
	}
	plain := s.get("/assets/dashboard.css")
	etag := plain.header.Get("ETag")
	if plain.status != http.StatusOK || etag == "" || plain.header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("plain name: %d, ETag %q, Cache-Control %q", plain.status, etag, plain.header.Get("Cache-Control"))
	}
	req, _ := http.NewRequest(http.MethodGet, s.url+"/assets/dashboard.css", nil)
	req.Header.Set("If-None-Match", etag)
	wantStatus(t, "If-None-Match", s.do(req), http.StatusNotModified)
	wantStatus(t, "unknown asset", s.get("/assets/nope.js"), http.StatusNotFound)
}

func TestAPIKeepsItsRoutes(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	for path, want := range map[string]string{
		"/healthz":         `"ok"`,
		"/v1/topics":       `"topics"`,
		"/v1/openapi.json": `"openapi"`,
		"/v1/nope":         `"not_found"`,
	} {
		if a := s.get(path); !strings.Contains(a.body, want) {
			t.Errorf("GET %s = %d %.200s, want %s", path, a.status, a.body, want)
		}
	}
}

func TestSearchBodiesIsBounded(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	s.bury("t", "dead-one") // an empty body
	specs := make([]delayq.Spec, 0, 1000)
	for i := range bodyScanLimit + 10 {
		specs = append(specs, delayq.Spec{ID: fmt.Sprintf("j%05d", i), Delay: time.Hour + time.Duration(i)*time.Millisecond,
			Body: []byte(fmt.Sprintf(`{"n":%d,"tag":"<b>"}`, i)), Format: delayq.FormatJSON})
		if len(specs) == cap(specs) || i == bodyScanLimit+9 {
			if _, err := s.client.EnqueueBatch(t.Context(), "t", specs); err != nil {
				t.Fatal(err)
			}
			specs = specs[:0]
		}
	}
	for _, tc := range []struct{ text, want string }{
		{`"n":7,`, `1 job(s) of topic <strong>t</strong> whose body holds <code>&#34;n&#34;:7,</code>:` + "\n" + `2000 of its 2011 jobs read (41.9 KiB of bodies), the search stopped there: it reads at most 2000 jobs or 32.0 MiB of bodies.`},
		{`"n":2005,`, `0 job(s)`},
		{`"n":1`, `50 job(s) of topic <strong>t</strong> whose body holds <code>&#34;n&#34;:1</code> (the first 50)`},
	} {
		a := s.get("/search?topic=t&body=" + url.QueryEscape(tc.text))
		if a.status != http.StatusOK || !strings.Contains(a.body, tc.want) {
			t.Errorf("body %q: %d, lacks %q:\n%.1500s", tc.text, a.status, tc.want, a.body)
		}
	}
	small := newSite(t, nil)
	small.enqueue("t", delayq.Spec{ID: "a", Body: []byte("needle <script>")})
	small.bury("u", "b")
	a := small.get("/search?topic=t&body=" + url.QueryEscape("<script>"))
	if !strings.Contains(a.body, `href="/topics/t/jobs/a"`) || !strings.Contains(a.body, "1 of its 1 jobs read (15 B of bodies).") {
		t.Errorf("a complete search:\n%s", a.body)
	}
}

// A body of deep nesting would indent to a page of 160 MB, built in memory; the page shows
// it as stored instead, and stays small whatever the body.
func TestJobPageBoundsADeeplyNestedBody(t *testing.T) {
	s := newSite(t, nil)
	body := deepJSON(9000)
	s.enqueue("t", delayq.Spec{ID: "deep", Body: body, Format: delayq.FormatJSON})
	var a answer
	alloc := allocatedBy(func() { a = s.get("/topics/t/jobs/deep") })
	wantStatus(t, "job", a, http.StatusOK)
	if len(a.body) > 1<<20 || alloc > 32<<20 {
		t.Fatalf("the page of a %d-byte body: %d bytes, %d bytes allocated", len(body), len(a.body), alloc)
	}
	for _, want := range []string{`<pre class="body" id="body">` + strings.Repeat("[", 9000) + "0,0,", `id="body-note"`,
		`<a href="/topics/t/jobs/deep/body" id="body-download">download</a>`} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the job page lacks %.80q", want)
		}
	}
}

// A body search over bodies of 1 MiB stops at its byte budget, well before its job count, and
// says so.
func TestSearchBodiesStopsAtItsByteBudget(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	const jobs = 40
	for i := range jobs {
		body := bytes.Repeat([]byte{'a' + byte(i%26)}, 1<<20)
		s.enqueue("big", delayq.Spec{ID: fmt.Sprintf("j%02d", i), Body: body, Delay: time.Hour + time.Duration(i)*time.Second})
	}
	a := s.get("/search?topic=big&body=needle")
	wantStatus(t, "search", a, http.StatusOK)
	read := regexpFind(t, a.body, `(\d+) of its 40 jobs read`)
	if n, _ := strconv.Atoi(read); n > 32 || !strings.Contains(a.body, "(32.0 MiB of bodies), the search stopped there: it reads at most 2000 jobs or 32.0 MiB of bodies.") {
		t.Errorf("a search over %d bodies of 1 MiB read %s of them:\n%.2000s", jobs, read, a.body)
	}
}

// A search by id lists at most maxFound jobs: one id in 8,000 topics with long names listed
// them all, and took the page past its budget.
func TestSearchByIDListsAtMostItsMatches(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	const topics = 8000
	id := strings.Repeat("i", 250)
	topic := func(i int) string { return fmt.Sprintf("%s-%05d", strings.Repeat("t", 120), i) }
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range topics {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := s.client.Enqueue(context.Background(), topic(i), delayq.Spec{ID: id}); err != nil {
				t.Errorf("Enqueue: %v", err)
			}
		})
	}
	wg.Wait()
	a := s.get("/search?q=" + id)
	wantStatus(t, "an id in 8,000 topics", a, http.StatusOK)
	if n := strings.Count(a.body, `<li><a href="/topics/`); n != maxFound {
		t.Errorf("the search lists %d jobs, want %d", n, maxFound)
	}
	if want := fmt.Sprintf("the first %d", maxFound); !strings.Contains(a.body, want) {
		t.Errorf("the search does not say it lists %q", want)
	}
}
