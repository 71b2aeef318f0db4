package store

import (
	"fmt"
)

// Record states as scripts report them.
const (
	StateDelayed  = 1
	StateReady    = 2
	StateReserved = 3
	StateDead     = 4
)

// Record is a job as a script returns it (lib.lua's reply), times in Unix ms.
type Record struct {
	ID              string
	State           int
	Format          int
	Priority        int
	CreatedMs       int64
	RunAtMs         int64
	Attempts        int
	MaxRetries      int
	TTRMs           int64
	Body            []byte
	BackoffMs       []int64 // nil for the default
	Callback        string
	LastError       string
	Lease           string
	LeaseDeadlineMs int64 // 0 when not reserved
	DiedMs          int64 // 0 when not dead
}

const recordFields = 16

func parseRecords(vals []any) ([]Record, error) {
	out := make([]Record, len(vals))
	for i, v := range vals {
		r, err := parseRecord(v)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

func parseRecord(v any) (Record, error) {
	f, ok := v.([]any)
	if !ok || len(f) != recordFields {
		return Record{}, fmt.Errorf("delayq: malformed job reply %T (%d fields)", v, len(f))
	}
	r := Record{
		ID:              toString(f[0]),
		State:           int(toInt(f[1])),
		Format:          int(toInt(f[2])),
		Priority:        int(toInt(f[3])),
		CreatedMs:       toInt(f[4]),
		RunAtMs:         toInt(f[5]),
		Attempts:        int(toInt(f[6])),
		MaxRetries:      int(toInt(f[7])),
		TTRMs:           toInt(f[8]),
		Body:            []byte(toString(f[9])),
		Callback:        toString(f[11]),
		LastError:       toString(f[12]),
		Lease:           toString(f[13]),
		LeaseDeadlineMs: toInt(f[14]),
		DiedMs:          toInt(f[15]),
	}
	if steps, ok := f[10].([]any); ok {
		r.BackoffMs = make([]int64, len(steps))
		for i, s := range steps {
			r.BackoffMs[i] = toInt(s)
		}
	}
	return r, nil
}

// toInt reads an integer reply; a missing field (Lua false, nil here) is 0.
func toInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}
