package dashboard

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// age writes a duration the way an operator reads it at a glance: "—" for none, then the two
// largest units.
func age(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// humanBytes writes a size in bytes with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// pager is where a paged list stands: pages count from 1; Prev and Next are 0 when none.
type pager struct {
	Page, Pages int
	Prev, Next  int
}

// paginate reads the request's ?page= over n items of per a page, and returns where the page
// stands and the bounds [from, to) of its items.
func paginate(r *http.Request, n, per int) (p pager, from, to int) {
	p.Pages = max(1, (n+per-1)/per)
	p.Page, _ = strconv.Atoi(r.URL.Query().Get("page"))
	p.Page = min(max(p.Page, 1), p.Pages)
	if p.Page > 1 {
		p.Prev = p.Page - 1
	}
	if p.Page < p.Pages {
		p.Next = p.Page + 1
	}
	from = (p.Page - 1) * per
	return p, from, min(from+per, n)
}

// times writes how many times something happened: once, twice, 3 times.
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return strconv.Itoa(n) + " times"
}

// uniqueForText writes a topic's default unique_for (TopicDefaults.UniqueFor; not zero).
func uniqueForText(d time.Duration) string {
	if d == delayq.NoUniqueFor {
		return "none: the ids of its jobs are free once they end"
	}
	return apiv1.FormatMs(d.Milliseconds()) + " after its jobs end, for jobs with an id that give none"
}
