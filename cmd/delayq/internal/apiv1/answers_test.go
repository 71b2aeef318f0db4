package apiv1

import (
	"testing"
	"time"

	"github.com/delayq/delayq"
)

func TestSmallAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"error", ErrorResponse{Error: Error{Code: "not_found", Message: "no job <x>"}},
			`{"error":{"code":"not_found","message":"no job <x>"}}`},
		{"topic with nothing pending", NewTopicStats(&delayq.TopicStats{Name: "t", Dead: 2, Partitions: 1}),
			`{"name":"t","delayed":0,"ready":0,"reserved":0,"dead":2,"next_run_at":null,"oldest_ready_ms":0,` +
				`"paused":false,"limits":{"rate":0,"period_ms":0,"concurrency":0},"partitions":1,"leases_expired":0}`},
		{"topic", NewTopicStats(&delayq.TopicStats{Name: "t", Ready: 1, NextRunAt: time.UnixMilli(1500), OldestReady: 2500 * time.Millisecond, Partitions: 1}),
			`{"name":"t","delayed":0,"ready":1,"reserved":0,"dead":0,"next_run_at":"1970-01-01T00:00:01.500Z","oldest_ready_ms":2500,` +
				`"paused":false,"limits":{"rate":0,"period_ms":0,"concurrency":0},"partitions":1,"leases_expired":0}`},
		{"paused topic with limits", NewTopicStats(&delayq.TopicStats{Name: "t", Paused: true, Partitions: 16,
			Limits: delayq.TopicLimits{Rate: 100, Period: time.Second, Concurrency: 32}}),
			`{"name":"t","delayed":0,"ready":0,"reserved":0,"dead":0,"next_run_at":null,"oldest_ready_ms":0,` +
				`"paused":true,"limits":{"rate":100,"period_ms":1000,"concurrency":32},"partitions":16,"leases_expired":0}`},
		{"last page of dead letters", DeadPage{Jobs: NewJobs(nil, false)}, `{"jobs":[]}`},
		{"touch", TouchResponse{LeaseDeadline: Time{time.UnixMilli(1)}}, `{"lease_deadline":"1970-01-01T00:00:00.001Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	if got := (&Error{Code: "lease_lost", Message: "expired"}).Error(); got != "lease_lost: expired" {
		t.Errorf("Error() = %q", got)
	}
	if got := (&Error{Code: "internal"}).Error(); got != "internal" {
		t.Errorf("Error() = %q", got)
	}
}
