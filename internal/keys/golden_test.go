package keys

import (
	"fmt"
	"strings"
	"testing"
)

// The key layout and the partition of a job id are part of the data format: a version that
// changed either could not find the jobs an earlier one wrote. These golden values must never
// change.
func TestKeyLayoutGolden(t *testing.T) {
	p := For("delayq", "orders.eu-1", 7)
	s := ScheduleFor("delayq", "nightly.report")
	got := strings.Join(append(p.All(), p.Call("c1"), Topics("delayq"), NewTopics("delayq"),
		p.Ticks(), s.State(), s.Call("c2"), Schedules("delayq"), DashboardKey("delayq"),
		RevokedSession("delayq", "s1"), p.Ended("order-42")), "\n")
	want := strings.Join([]string{
		"delayq:{orders.eu-1#7}:jobs",
		"delayq:{orders.eu-1#7}:delayed",
		"delayq:{orders.eu-1#7}:ready",
		"delayq:{orders.eu-1#7}:ready:push",
		"delayq:{orders.eu-1#7}:reserved",
		"delayq:{orders.eu-1#7}:dead",
		"delayq:{orders.eu-1#7}:notify",
		"delayq:{orders.eu-1#7}:leases",
		"delayq:{orders.eu-1#7}:settings",
		"delayq:{orders.eu-1#7}:starts",
		"delayq:{orders.eu-1#7}:history",
		"delayq:{orders.eu-1#7}:call:c1",
		"delayq:topics",
		"delayq:topics:new",
		"delayq:{orders.eu-1#7}:ticks",
		"delayq:{schedule:nightly.report}:state",
		"delayq:{schedule:nightly.report}:call:c2",
		"delayq:schedules",
		"delayq:dashboard:key",
		"delayq:dashboard:revoked:s1",
		"delayq:{orders.eu-1#7}:ended:O_ixV8Qjju_lrkpm",
	}, "\n")
	if got != want {
		t.Fatalf("key layout changed:\n%s\nwant:\n%s", got, want)
	}
}

func TestPartitionOfGolden(t *testing.T) {
	ids := []string{"a", "order-42", "01JD3Q8ZQ4N9X7M2K5T6V8W0YB", "ünïcødé", "x/y:z", ""}
	var got []string
	for _, n := range []int{1, 4, 16, 1024} {
		var parts []string
		for _, id := range ids {
			parts = append(parts, fmt.Sprint(PartitionOf(id, n)))
		}
		got = append(got, fmt.Sprintf("%d: %s", n, strings.Join(parts, " ")))
	}
	want := []string{
		"1: 0 0 0 0 0 0",
		"4: 0 0 0 0 3 1",
		"16: 12 4 0 0 3 5",
		"1024: 300 756 384 928 227 453",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("PartitionOf changed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
