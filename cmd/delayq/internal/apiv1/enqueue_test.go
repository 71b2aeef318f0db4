package apiv1

import (
	"encoding/json"
	"testing"
)

func TestEnqueueRequestEncodeKeepsTheBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   EnqueueRequest
		want string
	}{
		{"nothing given", EnqueueRequest{}, `{}`},
		{"body alone", EnqueueRequest{Body: json.RawMessage(` {"a": "<&>"} `)}, `{"body": {"a": "<&>"} }`},
		{"body first, then the rest in order", EnqueueRequest{
			ID: new("j"), Body: json.RawMessage(`[1, 2]`), DelayMs: new(int64(0)), MaxRetries: new(int64(3)),
			BackoffMs: []int64{10}, CallbackURL: new("https://h/x?a=1&b=2"),
		}, `{"body":[1, 2],"id":"j","delay_ms":0,"max_retries":3,"backoff_ms":[10],"callback_url":"https://h/x?a=1\u0026b=2"}`},
		{"binary", EnqueueRequest{BodyBase64: new(""), RunAt: new("2026-11-22T10:00:00.123Z")}, `{"body_base64":"","run_at":"2026-11-22T10:00:00.123Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.in.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Encode = %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := (&EnqueueRequest{Body: json.RawMessage(`{`)}).Encode(); err == nil {
		t.Error("a body that is not JSON was encoded")
	}
}

func TestBatchRequestEncodeKeepsTheItems(t *testing.T) {
	t.Parallel()
	r := BatchRequest{Jobs: []json.RawMessage{json.RawMessage(`{"body": "<&>"}`), json.RawMessage(`{}`)}}
	got, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jobs":[{"body": "<&>"},{}]}`; string(got) != want {
		t.Errorf("Encode = %s, want %s", got, want)
	}
	r.Jobs = append(r.Jobs, json.RawMessage(`{"id":`))
	if _, err := r.Encode(); err == nil {
		t.Error("an item that is not JSON was encoded")
	}
}

func TestDeadSelectionLeavesOutWhatIsNotGiven(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   DeadSelection
		want string
	}{
		{DeadSelection{All: new(true)}, `{"all":true}`},
		{DeadSelection{IDs: []string{"a"}}, `{"ids":["a"]}`},
		{DeadSelection{IDs: []string{}}, `{"ids":[]}`},
	} {
		got, err := json.Marshal(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("Marshal(%+v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestScheduleRequestEncodeKeepsTheJobsBody(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   ScheduleRequest
		want string
	}{
		{ScheduleRequest{Cron: new("@hourly")}, `{"cron":"@hourly"}`},
		{ScheduleRequest{Job: &EnqueueRequest{}}, `{"job":{}}`},
		{ScheduleRequest{Cron: new("*/5 * * * *"), Topic: new("t"), Job: &EnqueueRequest{Body: json.RawMessage(`{"a": "<&>"}`), TTRMs: new(int64(100))}},
			`{"job":{"body":{"a": "<&>"},"ttr_ms":100},"cron":"*/5 * * * *","topic":"t"}`},
	} {
		got, err := tt.in.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("Encode = %s, want %s", got, tt.want)
		}
	}
	if _, err := (&ScheduleRequest{Job: &EnqueueRequest{Body: json.RawMessage(`{`)}}).Encode(); err == nil {
		t.Error("a job body that is not JSON was encoded")
	}
}
