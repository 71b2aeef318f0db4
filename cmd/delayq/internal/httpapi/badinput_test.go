package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// badCase is a request that must be refused with status and code, changing nothing.
type badCase struct {
	name   string
	method string
	path   string
	ctype  string // Content-Type; "-" sends none; "" means application/json
	body   string // "{lease}" is replaced by the lease of the reserved seed job
	push   bool   // send to the server that has push delivery enabled
	status int
	code   string
	msg    string // a substring the message must have, when set
}

var (
	long129   = strings.Repeat("a", 129)
	long257   = strings.Repeat("i", 257)
	bigBody   = `"` + strings.Repeat("x", 1100) + `"` // over testLimits.MaxBody as JSON text
	bigBase64 = base64.StdEncoding.EncodeToString(make([]byte, 1025))
	tooMany   = `{"jobs": [` + strings.Repeat(`{},`, 1000) + `{}]}`
	hugeBatch = `{"jobs": [` + strings.Repeat(`{"body": "`+strings.Repeat("y", 1000)+`"},`, 250) + `{}]}`
	steps101  = `[` + strings.Repeat(`1,`, 100) + `1]`
)

// badCases has the refused requests. The seed topic "t" holds ready1, delayed1, res1 (reserved)
// and dead1; "fresh" does not exist.
var badCases = []badCase{
	// Names.
	{"topic too long", "POST", "/v1/topics/" + long129 + "/jobs", "", `{}`, false, 400, codeInvalid, "topic"},
	{"topic with space", "POST", "/v1/topics/a%20b/jobs", "", `{}`, false, 400, codeInvalid, "topic"},
	{"topic starts with dash", "POST", "/v1/topics/-a/jobs", "", `{}`, false, 400, codeInvalid, "topic"},
	{"topic with braces", "POST", "/v1/topics/%7Bt%7D/jobs", "", `{}`, false, 400, codeInvalid, "topic"},
	{"topic with colon", "GET", "/v1/topics/a:b", "-", ``, false, 400, codeInvalid, "topic"},
	{"path id too long", "GET", "/v1/topics/t/jobs/" + long257, "-", ``, false, 400, codeInvalid, "id"},
	{"path id with space", "GET", "/v1/topics/t/jobs/a%20b", "-", ``, false, 400, codeInvalid, "id"},
	{"path id with tab", "DELETE", "/v1/topics/t/jobs/a%09b", "-", ``, false, 400, codeInvalid, "id"},
	{"path id not utf-8", "GET", "/v1/topics/t/jobs/%FF", "-", ``, false, 400, codeInvalid, "id"},
	{"body id with space", "POST", "/v1/topics/fresh/jobs", "", `{"id": "a b"}`, false, 400, codeInvalid, "id"},
	{"body id empty", "POST", "/v1/topics/fresh/jobs", "", `{"id": ""}`, false, 400, codeInvalid, "id"},
	{"body id too long", "POST", "/v1/topics/fresh/jobs", "", `{"id": "` + long257 + `"}`, false, 400, codeInvalid, "id"},
	{"body id control char", "POST", "/v1/topics/fresh/jobs", "", `{"id": "a\u0001"}`, false, 400, codeInvalid, "id"},
	{"body id a number", "POST", "/v1/topics/fresh/jobs", "", `{"id": 5}`, false, 400, codeInvalid, "id"},

	// Sizes.
	{"json body over limit", "POST", "/v1/topics/fresh/jobs", "", `{"body": ` + bigBody + `}`, false, 413, codeTooLarge, ""},
	{"base64 body over limit", "POST", "/v1/topics/fresh/jobs", "", `{"body_base64": "` + bigBase64 + `"}`, false, 413, codeTooLarge, ""},
	{"request over limit", "POST", "/v1/topics/fresh/jobs", "", `{"body": "` + strings.Repeat("z", 70_000) + `"}`, false, 413, codeTooLarge, ""},
	{"batch request over limit", "POST", "/v1/topics/fresh/jobs/batch", "", hugeBatch, false, 413, codeTooLarge, ""},
	{"ack request over limit", "POST", "/v1/topics/t/jobs/res1/ack", "", `{"lease": "` + strings.Repeat("l", 70_000) + `"}`, false, 413, codeTooLarge, ""},

	// Types.
	{"delay_ms string", "POST", "/v1/topics/fresh/jobs", "", `{"delay_ms": "5"}`, false, 400, codeInvalid, "delay_ms"},
	{"delay_ms float", "POST", "/v1/topics/fresh/jobs", "", `{"delay_ms": 1.5}`, false, 400, codeInvalid, "delay_ms"},
	{"delay_ms negative", "POST", "/v1/topics/fresh/jobs", "", `{"delay_ms": -1}`, false, 400, codeInvalid, "delay_ms"},
	{"delay_ms 1e30", "POST", "/v1/topics/fresh/jobs", "", `{"delay_ms": 1e30}`, false, 400, codeInvalid, "delay_ms"},
	{"delay_ms beyond int64", "POST", "/v1/topics/fresh/jobs", "", `{"delay_ms": 99999999999999999999}`, false, 400, codeInvalid, "delay_ms"},
	{"delay_ms beyond 10 years", "POST", "/v1/topics/fresh/jobs", "", `{"delay_ms": 315360000001}`, false, 400, codeInvalid, "delay_ms"},
	{"delay_ms max int64", "POST", "/v1/topics/fresh/jobs", "", `{"delay_ms": 9223372036854775807}`, false, 400, codeInvalid, "delay_ms"},
	{"ttr_ms array", "POST", "/v1/topics/fresh/jobs", "", `{"ttr_ms": [100]}`, false, 400, codeInvalid, "ttr_ms"},
	{"priority object", "POST", "/v1/topics/fresh/jobs", "", `{"priority": {}}`, false, 400, codeInvalid, "priority"},
	{"max_retries bool", "POST", "/v1/topics/fresh/jobs", "", `{"max_retries": true}`, false, 400, codeInvalid, "max_retries"},
	{"backoff_ms not array", "POST", "/v1/topics/fresh/jobs", "", `{"backoff_ms": 5}`, false, 400, codeInvalid, "backoff_ms"},
	{"backoff_ms float step", "POST", "/v1/topics/fresh/jobs", "", `{"backoff_ms": [1, 2.5]}`, false, 400, codeInvalid, "backoff_ms"},
	{"body_base64 not base64", "POST", "/v1/topics/fresh/jobs", "", `{"body_base64": "***"}`, false, 400, codeInvalid, "body_base64"},
	{"body_base64 a number", "POST", "/v1/topics/fresh/jobs", "", `{"body_base64": 5}`, false, 400, codeInvalid, "body_base64"},
	{"top-level array", "POST", "/v1/topics/fresh/jobs", "", `[]`, false, 400, codeInvalid, ""},
	{"top-level null", "POST", "/v1/topics/fresh/jobs", "", `null`, false, 400, codeInvalid, ""},
	{"top-level string", "POST", "/v1/topics/fresh/jobs", "", `"job"`, false, 400, codeInvalid, ""},

	// Limits.
	{"ttr_ms 99", "POST", "/v1/topics/fresh/jobs", "", `{"ttr_ms": 99}`, false, 400, codeInvalid, "ttr_ms"},
	{"ttr_ms 86400001", "POST", "/v1/topics/fresh/jobs", "", `{"ttr_ms": 86400001}`, false, 400, codeInvalid, "ttr_ms"},
	{"max_retries -1", "POST", "/v1/topics/fresh/jobs", "", `{"max_retries": -1}`, false, 400, codeInvalid, "max_retries"},
	{"max_retries 1001", "POST", "/v1/topics/fresh/jobs", "", `{"max_retries": 1001}`, false, 400, codeInvalid, "max_retries"},
	{"max_snoozes -1", "POST", "/v1/topics/fresh/jobs", "", `{"max_snoozes": -1}`, false, 400, codeInvalid, "max_snoozes"},
	{"max_snoozes 1000001", "POST", "/v1/topics/fresh/jobs", "", `{"max_snoozes": 1000001}`, false, 400, codeInvalid, "max_snoozes"},
	{"priority 1001", "POST", "/v1/topics/fresh/jobs", "", `{"priority": 1001}`, false, 400, codeInvalid, "priority"},
	{"priority -1001", "POST", "/v1/topics/fresh/jobs", "", `{"priority": -1001}`, false, 400, codeInvalid, "priority"},
	{"backoff_ms empty", "POST", "/v1/topics/fresh/jobs", "", `{"backoff_ms": []}`, false, 400, codeInvalid, "backoff_ms"},
	{"backoff_ms negative step", "POST", "/v1/topics/fresh/jobs", "", `{"backoff_ms": [-1]}`, false, 400, codeInvalid, "backoff_ms[0]"},
	{"backoff_ms 101 steps", "POST", "/v1/topics/fresh/jobs", "", `{"backoff_ms": ` + steps101 + `}`, false, 400, codeInvalid, "backoff_ms"},
	{"run_at not RFC 3339", "POST", "/v1/topics/fresh/jobs", "", `{"run_at": "tomorrow"}`, false, 400, codeInvalid, "run_at"},
	{"run_at with a space", "POST", "/v1/topics/fresh/jobs", "", `{"run_at": "2026-11-22 10:00:00Z"}`, false, 400, codeInvalid, "run_at"},
	{"run_at before 1970", "POST", "/v1/topics/fresh/jobs", "", `{"run_at": "1969-12-31T23:59:59Z"}`, false, 400, codeInvalid, "run_at"},
	{"run_at year 1", "POST", "/v1/topics/fresh/jobs", "", `{"run_at": "0001-01-01T00:00:00Z"}`, false, 400, codeInvalid, "run_at"},
	{"run_at beyond 10 years", "POST", "/v1/topics/fresh/jobs", "", `{"run_at": "2999-01-01T00:00:00Z"}`, false, 400, codeInvalid, "run_at"},

	// Conflicts and ended ids.
	{"unique_for_ms negative", "POST", "/v1/topics/fresh/jobs", "", `{"id": "u", "unique_for_ms": -1}`, false, 400, codeInvalid, "unique_for_ms"},
	{"unique_for_ms beyond 10 years", "POST", "/v1/topics/fresh/jobs", "", `{"id": "u", "unique_for_ms": 315360000001}`, false, 400, codeInvalid, "unique_for_ms"},
	{"unique_for_ms a string", "POST", "/v1/topics/fresh/jobs", "", `{"id": "u", "unique_for_ms": "60000"}`, false, 400, codeInvalid, "unique_for_ms"},
	{"unique_for_ms without an id", "POST", "/v1/topics/fresh/jobs", "", `{"unique_for_ms": 60000}`, false, 400, codeInvalid, "unique_for_ms"},
	{"unique_for_ms 0 without an id", "POST", "/v1/topics/fresh/jobs", "", `{"unique_for_ms": 0}`, false, 400, codeInvalid, "unique_for_ms"},
	{"on_conflict unknown", "POST", "/v1/topics/fresh/jobs", "", `{"id": "u", "on_conflict": "merge"}`, false, 400, codeInvalid, "on_conflict"},
	{"on_conflict empty", "POST", "/v1/topics/fresh/jobs", "", `{"id": "u", "on_conflict": ""}`, false, 400, codeInvalid, "on_conflict"},
	{"on_conflict in another case", "POST", "/v1/topics/fresh/jobs", "", `{"id": "u", "on_conflict": "Keep"}`, false, 400, codeInvalid, "on_conflict"},
	{"on_conflict keep without an id", "POST", "/v1/topics/fresh/jobs", "", `{"on_conflict": "keep"}`, false, 400, codeInvalid, "on_conflict"},
	{"on_conflict replace without an id", "POST", "/v1/topics/fresh/jobs", "", `{"on_conflict": "replace"}`, false, 400, codeInvalid, "on_conflict"},
	{"replace a reserved job", "POST", "/v1/topics/t/jobs", "", `{"id": "res1", "on_conflict": "replace"}`, false, 409, codePrecondition, ""},
	{"replace a dead job", "POST", "/v1/topics/t/jobs", "", `{"id": "dead1", "body": 2, "on_conflict": "replace"}`, false, 409, codePrecondition, ""},

	// Callbacks.
	{"callback_url when push is disabled", "POST", "/v1/topics/fresh/jobs", "", `{"callback_url": "https://example.com/hook"}`, false, 400, codeInvalid, "webhook secret"},
	{"callback_url not http", "POST", "/v1/topics/fresh/jobs", "", `{"callback_url": "ftp://example.com/hook"}`, true, 400, codeInvalid, "callback_url"},
	{"callback_url relative", "POST", "/v1/topics/fresh/jobs", "", `{"callback_url": "/hook"}`, true, 400, codeInvalid, "callback_url"},
	{"callback_url refused by check", "POST", "/v1/topics/fresh/jobs", "", `{"callback_url": "http://forbidden.example/x"}`, true, 400, codeInvalid, "private address"},
	{"callback_url too long", "POST", "/v1/topics/fresh/jobs", "", `{"callback_url": "https://example.com/` + strings.Repeat("p", 2048) + `"}`, true, 400, codeInvalid, "callback_url"},
	{"callback_url with a password", "POST", "/v1/topics/fresh/jobs", "", `{"callback_url": "https://user:s3cret@example.com/hook"}`, true, 400, codeInvalid, "user name or password"},
	{"callback_url with a user", "POST", "/v1/topics/fresh/jobs", "", `{"callback_url": "https://user@example.com/hook"}`, true, 400, codeInvalid, "user name or password"},

	// Both or neither.
	{"body and body_base64", "POST", "/v1/topics/fresh/jobs", "", `{"body": 1, "body_base64": "AQ=="}`, false, 400, codeInvalid, "body_base64"},
	{"delay_ms and run_at", "POST", "/v1/topics/fresh/jobs", "", `{"delay_ms": 0, "run_at": "2026-01-01T00:00:00Z"}`, false, 400, codeInvalid, "run_at"},
	{"reschedule neither", "PATCH", "/v1/topics/t/jobs/delayed1", "", `{}`, false, 400, codeInvalid, "delay_ms"},
	{"reschedule both", "PATCH", "/v1/topics/t/jobs/delayed1", "", `{"delay_ms": 5, "run_at": "2026-01-01T00:00:00Z"}`, false, 400, codeInvalid, "run_at"},
	{"reschedule negative delay", "PATCH", "/v1/topics/t/jobs/delayed1", "", `{"delay_ms": -5}`, false, 400, codeInvalid, "delay_ms"},
	{"reschedule bad run_at", "PATCH", "/v1/topics/t/jobs/delayed1", "", `{"run_at": "soon"}`, false, 400, codeInvalid, "run_at"},
	{"requeue ids and all", "POST", "/v1/topics/t/dead/requeue", "", `{"ids": ["dead1"], "all": true}`, false, 400, codeInvalid, "not both"},
	{"requeue neither", "POST", "/v1/topics/t/dead/requeue", "", `{}`, false, 400, codeInvalid, "ids"},
	{"requeue all false", "POST", "/v1/topics/t/dead/requeue", "", `{"all": false}`, false, 400, codeInvalid, "all"},
	{"requeue empty ids", "POST", "/v1/topics/t/dead/requeue", "", `{"ids": []}`, false, 400, codeInvalid, "ids"},
	{"requeue bad id", "POST", "/v1/topics/t/dead/requeue", "", `{"ids": ["dead1", "a b"]}`, false, 400, codeInvalid, "ids[1]"},
	{"delete dead neither", "DELETE", "/v1/topics/t/dead", "", `{}`, false, 400, codeInvalid, "ids"},
	{"delete dead all false", "DELETE", "/v1/topics/t/dead", "", `{"all": false}`, false, 400, codeInvalid, "all"},
	{"delete dead no body", "DELETE", "/v1/topics/t/dead", "-", ``, false, 415, codeMediaType, ""},

	// Malformed bodies.
	{"truncated JSON", "POST", "/v1/topics/fresh/jobs", "", `{"delay_ms":`, false, 400, codeInvalid, ""},
	{"trailing garbage", "POST", "/v1/topics/fresh/jobs", "", `{} x`, false, 400, codeInvalid, "after"},
	{"two objects", "POST", "/v1/topics/fresh/jobs", "", `{}{}`, false, 400, codeInvalid, "after"},
	{"unknown field", "POST", "/v1/topics/fresh/jobs", "", `{"delay": 5}`, false, 400, codeInvalid, "delay"},
	{"field name in another case", "POST", "/v1/topics/fresh/jobs", "", `{"DELAY_MS": 5}`, false, 400, codeInvalid, "DELAY_MS"},
	{"repeated key", "POST", "/v1/topics/fresh/jobs", "", `{"delay_ms": 5, "delay_ms": 6}`, false, 400, codeInvalid, "twice"},
	{"repeated key in reserve", "POST", "/v1/topics/fresh/reserve", "", `{"max": 1, "max": 2}`, false, 400, codeInvalid, "twice"},
	{"repeated header", "POST", "/v1/topics/fresh/jobs", "", `{"headers": {"a": "1", "a": "2"}}`, false, 400, codeInvalid, "invalid headers[a]: appears twice"},
	{"field name in another case in reserve", "POST", "/v1/topics/fresh/reserve", "", `{"Max": 1}`, false, 400, codeInvalid, "exact"},
	{"invalid UTF-8", "POST", "/v1/topics/fresh/jobs", "", "{\"body\": \"\xff\"}", false, 400, codeInvalid, "UTF-8"},
	{"empty body", "POST", "/v1/topics/fresh/jobs", "", ``, false, 400, codeInvalid, ""},
	{"single quotes", "POST", "/v1/topics/fresh/jobs", "", `{'body': 1}`, false, 400, codeInvalid, ""},
	{"text/plain", "POST", "/v1/topics/fresh/jobs", "text/plain", `{}`, false, 415, codeMediaType, ""},
	{"no content type", "POST", "/v1/topics/fresh/jobs", "-", `{}`, false, 415, codeMediaType, ""},
	{"form content type", "POST", "/v1/topics/fresh/jobs", "application/x-www-form-urlencoded", `a=b`, false, 415, codeMediaType, ""},
	{"latin-1 charset", "POST", "/v1/topics/fresh/jobs", "application/json; charset=latin1", `{}`, false, 415, codeMediaType, ""},
	{"bad content type syntax", "POST", "/v1/topics/fresh/jobs", "application/json; =", `{}`, false, 415, codeMediaType, ""},

	// Leases.
	{"ack forged lease", "POST", "/v1/topics/t/jobs/res1/ack", "", `{"lease": "forged"}`, false, 409, codeLeaseLost, ""},
	{"ack missing lease", "POST", "/v1/topics/t/jobs/res1/ack", "", `{}`, false, 400, codeInvalid, "lease"},
	{"ack empty lease", "POST", "/v1/topics/t/jobs/res1/ack", "", `{"lease": ""}`, false, 400, codeInvalid, "lease"},
	{"ack lease a number", "POST", "/v1/topics/t/jobs/res1/ack", "", `{"lease": 1}`, false, 400, codeInvalid, "lease"},
	{"ack unknown field", "POST", "/v1/topics/t/jobs/res1/ack", "", `{"lease": "{lease}", "extra": 1}`, false, 400, codeInvalid, "extra"},
	{"ack a ready job", "POST", "/v1/topics/t/jobs/ready1/ack", "", `{"lease": "{lease}"}`, false, 409, codeLeaseLost, ""},
	{"ack unknown job", "POST", "/v1/topics/t/jobs/nope/ack", "", `{"lease": "{lease}"}`, false, 409, codeLeaseLost, ""},
	{"nack forged lease", "POST", "/v1/topics/t/jobs/res1/nack", "", `{"lease": "forged", "dead": true}`, false, 409, codeLeaseLost, ""},
	{"nack negative delay", "POST", "/v1/topics/t/jobs/res1/nack", "", `{"lease": "{lease}", "delay_ms": -1}`, false, 400, codeInvalid, "delay_ms"},
	{"nack dead as string", "POST", "/v1/topics/t/jobs/res1/nack", "", `{"lease": "{lease}", "dead": "yes"}`, false, 400, codeInvalid, "dead"},
	{"nack missing lease", "POST", "/v1/topics/t/jobs/res1/nack", "", `{"dead": true}`, false, 400, codeInvalid, "lease"},
	{"touch forged lease", "POST", "/v1/topics/t/jobs/res1/touch", "", `{"lease": "forged"}`, false, 409, codeLeaseLost, ""},
	{"touch ttr_ms 99", "POST", "/v1/topics/t/jobs/res1/touch", "", `{"lease": "{lease}", "ttr_ms": 99}`, false, 400, codeInvalid, "ttr_ms"},
	{"release forged lease", "POST", "/v1/topics/t/jobs/res1/release", "", `{"lease": "forged"}`, false, 409, codeLeaseLost, ""},
	{"release delay_ms and run_at", "POST", "/v1/topics/t/jobs/res1/release", "", `{"lease": "{lease}", "delay_ms": 1000, "run_at": "2030-01-01T00:00:00.000Z"}`, false, 400, codeInvalid, "run_at"},
	{"release negative delay", "POST", "/v1/topics/t/jobs/res1/release", "", `{"lease": "{lease}", "delay_ms": -1}`, false, 400, codeInvalid, "delay_ms"},
	{"release run_at not a time", "POST", "/v1/topics/t/jobs/res1/release", "", `{"lease": "{lease}", "run_at": "tomorrow"}`, false, 400, codeInvalid, "run_at"},
	{"release unknown field", "POST", "/v1/topics/t/jobs/res1/release", "", `{"lease": "{lease}", "dead": true}`, false, 400, codeInvalid, "dead"},

	// Batches.
	{"batch of 1001", "POST", "/v1/topics/fresh/jobs/batch", "", tooMany, false, 400, codeInvalid, "jobs"},
	{"batch empty", "POST", "/v1/topics/fresh/jobs/batch", "", `{"jobs": []}`, false, 400, codeInvalid, "jobs"},
	{"batch without jobs", "POST", "/v1/topics/fresh/jobs/batch", "", `{}`, false, 400, codeInvalid, "jobs"},
	{"batch jobs null", "POST", "/v1/topics/fresh/jobs/batch", "", `{"jobs": null}`, false, 400, codeInvalid, "jobs"},
	{"batch jobs an object", "POST", "/v1/topics/fresh/jobs/batch", "", `{"jobs": {}}`, false, 400, codeInvalid, "jobs"},
	{"batch is an array", "POST", "/v1/topics/fresh/jobs/batch", "", `[{}]`, false, 400, codeInvalid, ""},

	// Reserve.
	{"reserve max 0", "POST", "/v1/topics/fresh/reserve", "", `{"max": 0}`, false, 400, codeInvalid, "max"},
	{"reserve max 1001", "POST", "/v1/topics/fresh/reserve", "", `{"max": 1001}`, false, 400, codeInvalid, "max"},
	{"reserve wait_ms 60001", "POST", "/v1/topics/fresh/reserve", "", `{"wait_ms": 60001}`, false, 400, codeInvalid, "wait_ms"},
	{"reserve wait_ms -1", "POST", "/v1/topics/fresh/reserve", "", `{"wait_ms": -1}`, false, 400, codeInvalid, "wait_ms"},
	{"reserve ttr_ms 99", "POST", "/v1/topics/fresh/reserve", "", `{"ttr_ms": 99}`, false, 400, codeInvalid, "ttr_ms"},
	{"reserve ttr_ms 86400001", "POST", "/v1/topics/fresh/reserve", "", `{"ttr_ms": 86400001}`, false, 400, codeInvalid, "ttr_ms"},
	{"reserve max float", "POST", "/v1/topics/fresh/reserve", "", `{"max": 2.0}`, false, 400, codeInvalid, "max"},
	{"reserve unknown field", "POST", "/v1/topics/fresh/reserve", "", `{"count": 2}`, false, 400, codeInvalid, "count"},
	{"reserve wrong content type", "POST", "/v1/topics/fresh/reserve", "text/plain", `{}`, false, 415, codeMediaType, ""},

	// Dead-letter listing.
	{"dead limit 0", "GET", "/v1/topics/t/dead?limit=0", "-", ``, false, 400, codeInvalid, "limit"},
	{"dead limit 1001", "GET", "/v1/topics/t/dead?limit=1001", "-", ``, false, 400, codeInvalid, "limit"},
	{"dead limit not a number", "GET", "/v1/topics/t/dead?limit=ten", "-", ``, false, 400, codeInvalid, "limit"},
	{"dead limit empty", "GET", "/v1/topics/t/dead?limit=", "-", ``, false, 400, codeInvalid, "limit"},
	{"dead bad cursor", "GET", "/v1/topics/t/dead?cursor=%21%21", "-", ``, false, 400, codeInvalid, "cursor"},

	// Topic controls.
	{"limits rate without period", "PUT", "/v1/topics/t/limits", "", `{"rate": 10}`, false, 400, codeInvalid, "period_ms"},
	{"limits period without rate", "PUT", "/v1/topics/t/limits", "", `{"period_ms": 1000}`, false, 400, codeInvalid, "period_ms"},
	{"limits rate negative", "PUT", "/v1/topics/t/limits", "", `{"rate": -1, "period_ms": 1000}`, false, 400, codeInvalid, "rate"},
	{"limits rate over its limit", "PUT", "/v1/topics/t/limits", "", `{"rate": 100001, "period_ms": 1000}`, false, 400, codeInvalid, "rate"},
	{"limits period over a day", "PUT", "/v1/topics/t/limits", "", `{"rate": 10, "period_ms": 86400001}`, false, 400, codeInvalid, "period_ms"},
	{"limits concurrency negative", "PUT", "/v1/topics/t/limits", "", `{"concurrency": -1}`, false, 400, codeInvalid, "concurrency"},
	{"limits rate a string", "PUT", "/v1/topics/t/limits", "", `{"rate": "10", "period_ms": 1000}`, false, 400, codeInvalid, "rate"},
	{"limits unknown field", "PUT", "/v1/topics/t/limits", "", `{"burst": 5}`, false, 400, codeInvalid, "burst"},
	{"limits no body", "PUT", "/v1/topics/t/limits", "-", ``, false, 415, codeMediaType, ""},
	{"defaults unique_for_ms negative", "PUT", "/v1/topics/t/defaults", "", `{"unique_for_ms": -1}`, false, 400, codeInvalid, "unique_for_ms"},
	{"defaults unique_for_ms beyond 10 years", "PUT", "/v1/topics/t/defaults", "", `{"unique_for_ms": 315360000001}`, false, 400, codeInvalid, "unique_for_ms"},
	{"defaults unique_for_ms a string", "PUT", "/v1/topics/t/defaults", "", `{"unique_for_ms": "1000"}`, false, 400, codeInvalid, "unique_for_ms"},
	{"defaults unknown field", "PUT", "/v1/topics/t/defaults", "", `{"ttr_ms": 1000}`, false, 400, codeInvalid, "ttr_ms"},
	{"defaults no body", "PUT", "/v1/topics/t/defaults", "-", ``, false, 415, codeMediaType, ""},
	{"pause unknown field", "POST", "/v1/topics/t/pause", "", `{"until": 5}`, false, 400, codeInvalid, "until"},
	{"pause text/plain", "POST", "/v1/topics/t/pause", "text/plain", `{}`, false, 415, codeMediaType, ""},
	{"resume unknown topic", "POST", "/v1/topics/fresh/resume", "-", ``, false, 404, codeNotFound, "fresh"},
	{"lift limits of unknown topic", "DELETE", "/v1/topics/fresh/limits", "-", ``, false, 404, codeNotFound, "fresh"},
	{"delete topic with jobs", "DELETE", "/v1/topics/t", "-", ``, false, 409, codePrecondition, "1 delayed, 1 ready, 1 reserved, 1 dead"},
	{"delete unknown topic", "DELETE", "/v1/topics/fresh?purge=true", "-", ``, false, 404, codeNotFound, "fresh"},
	{"delete purge not a boolean", "DELETE", "/v1/topics/t?purge=yes", "-", ``, false, 400, codeInvalid, "purge"},
	{"GET on pause", "GET", "/v1/topics/t/pause", "-", ``, false, 405, codeMethodNotAllowed, "POST"},

	// States, existence and routes.
	{"reschedule reserved", "PATCH", "/v1/topics/t/jobs/res1", "", `{"delay_ms": 0}`, false, 409, codePrecondition, ""},
	{"reschedule dead", "PATCH", "/v1/topics/t/jobs/dead1", "", `{"delay_ms": 0}`, false, 409, codePrecondition, ""},
	{"reschedule unknown", "PATCH", "/v1/topics/t/jobs/nope", "", `{"delay_ms": 0}`, false, 404, codeNotFound, ""},
	{"duplicate id", "POST", "/v1/topics/t/jobs", "", `{"id": "ready1"}`, false, 409, codeExists, ""},
	{"get unknown job", "GET", "/v1/topics/t/jobs/nope", "-", ``, false, 404, codeNotFound, ""},
	{"get job of unknown topic", "GET", "/v1/topics/fresh/jobs/nope", "-", ``, false, 404, codeNotFound, ""},
	{"cancel unknown job", "DELETE", "/v1/topics/t/jobs/nope", "-", ``, false, 404, codeNotFound, ""},
	{"unknown topic", "GET", "/v1/topics/fresh", "-", ``, false, 404, codeNotFound, ""},
	{"unknown route", "GET", "/v1/nothing", "-", ``, false, 404, codeNotFound, "no route"},
	{"unknown route outside v1", "GET", "/favicon.ico", "-", ``, false, 404, codeNotFound, "no route"},
	{"PUT on jobs", "PUT", "/v1/topics/t/jobs", "", `{}`, false, 405, codeMethodNotAllowed, ""},
	{"GET on reserve", "GET", "/v1/topics/t/reserve", "-", ``, false, 405, codeMethodNotAllowed, ""},
	{"POST on healthz", "POST", "/healthz", "", `{}`, false, 405, codeMethodNotAllowed, ""},
	{"GET on jobs/batch", "GET", "/v1/topics/t/jobs/batch", "-", ``, false, 405, codeMethodNotAllowed, "allowed: POST"},
	{"DELETE on jobs/batch", "DELETE", "/v1/topics/t/jobs/batch", "-", ``, false, 405, codeMethodNotAllowed, "allowed: POST"},
	{"PATCH on jobs/batch", "PATCH", "/v1/topics/t/jobs/batch", "", `{"delay_ms": 1}`, false, 405, codeMethodNotAllowed, "allowed: POST"},
	{"PUT on a job", "PUT", "/v1/topics/t/jobs/j", "", `{}`, false, 405, codeMethodNotAllowed, "DELETE"},
	{"GET on ack", "GET", "/v1/topics/t/jobs/j/ack", "-", ``, false, 405, codeMethodNotAllowed, "POST"},
	{"id batch", "POST", "/v1/topics/t/jobs", "", `{"id": "batch"}`, false, 400, codeInvalid, "batch endpoint"},

	// Schedules.
	{"schedule cron of four fields", "PUT", "/v1/schedules/s", "", `{"cron": "*/5 * * *", "topic": "t"}`, false, 400, codeInvalid, "invalid cron"},
	{"schedule cron field out of range", "PUT", "/v1/schedules/s", "", `{"cron": "61 * * * *", "topic": "t"}`, false, 400, codeInvalid, "invalid cron"},
	{"schedule cron too long", "PUT", "/v1/schedules/s", "", `{"cron": "` + strings.Repeat("*", 257) + `", "topic": "t"}`, false, 400, codeInvalid, "invalid cron"},
	{"schedule interval under 1 s", "PUT", "/v1/schedules/s", "", `{"cron": "@every 500ms", "topic": "t"}`, false, 400, codeInvalid, "under 1s"},
	{"schedule interval in part seconds", "PUT", "/v1/schedules/s", "", `{"cron": "@every 1500ms", "topic": "t"}`, false, 400, codeInvalid, "whole number of seconds"},
	{"schedule interval over ten years", "PUT", "/v1/schedules/s", "", `{"cron": "@every 1000000h", "topic": "t"}`, false, 400, codeInvalid, "invalid cron"},
	{"schedule start_at in the year 9999", "PUT", "/v1/schedules/s", "", `{"cron": "@every 1s", "topic": "t", "start_at": "9999-12-31T23:59:59Z"}`, false, 400, codeInvalid, "invalid start_at"},
	{"schedule cron never ticks", "PUT", "/v1/schedules/s", "", `{"cron": "0 0 30 2 *", "topic": "t"}`, false, 400, codeInvalid, "never ticks"},
	{"schedule end_at in the past", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "end_at": "2001-01-01T00:00:00Z"}`, false, 400, codeInvalid, "in the past"},
	{"schedule end_at before the first tick", "PUT", "/v1/schedules/s", "", `{"cron": "0 0 1 1 *", "topic": "t", "start_at": "2030-01-01T00:00:01Z", "end_at": "2030-06-01T00:00:00Z"}`, false, 400, codeInvalid, "before the first tick"},
	{"schedule unknown time zone", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "timezone": "Mars/Olympus", "topic": "t"}`, false, 400, codeInvalid, "invalid timezone"},
	{"schedule without cron", "PUT", "/v1/schedules/s", "", `{"topic": "t"}`, false, 400, codeInvalid, "invalid cron"},
	{"schedule without topic", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly"}`, false, 400, codeInvalid, "invalid topic"},
	{"schedule job id", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "job": {"id": "x"}}`, false, 400, codeInvalid, "invalid job.id"},
	{"schedule job delay_ms", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "job": {"delay_ms": 5}}`, false, 400, codeInvalid, "invalid job.delay_ms"},
	{"schedule job unique_for_ms", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "job": {"unique_for_ms": 60000}}`, false, 400, codeInvalid, "invalid job.unique_for_ms: a tick's job"},
	{"schedule job on_conflict", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "job": {"on_conflict": "replace"}}`, false, 400, codeInvalid, "invalid job.on_conflict: a tick's job"},
	{"schedule job ttr_ms 99", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "job": {"ttr_ms": 99}}`, false, 400, codeInvalid, "invalid job.ttr_ms"},
	{"schedule job backoff_ms negative step", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "job": {"backoff_ms": [-1]}}`, false, 400, codeInvalid, "invalid job.backoff_ms[0]"},
	{"schedule job body and body_base64", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "job": {"body": 1, "body_base64": "AQ=="}}`, false, 400, codeInvalid, "invalid job.body_base64"},
	{"schedule job body over limit", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "job": {"body": ` + bigBody + `}}`, false, 413, codeTooLarge, "job.body"},
	{"schedule job callback_url when push is disabled", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "job": {"callback_url": "https://example.com/hook"}}`, false, 400, codeInvalid, "webhook secret"},
	{"schedule job callback_url refused by check", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "job": {"callback_url": "http://forbidden.example/x"}}`, true, 400, codeInvalid, "private address"},
	{"schedule start_at not RFC 3339", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "start_at": "tomorrow"}`, false, 400, codeInvalid, "invalid start_at"},
	{"schedule end before start", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "start_at": "2030-01-02T00:00:00Z", "end_at": "2030-01-01T00:00:00Z"}`, false, 400, codeInvalid, "invalid end_at"},
	{"schedule missed all", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "missed": "all"}`, false, 400, codeInvalid, "invalid missed"},
	{"schedule unknown field", "PUT", "/v1/schedules/s", "", `{"cron": "@hourly", "topic": "t", "every": 5}`, false, 400, codeInvalid, "every"},
	{"schedule bad name", "PUT", "/v1/schedules/a%20b", "", `{"cron": "@hourly", "topic": "t"}`, false, 400, codeInvalid, "invalid name"},
	{"schedule no body", "PUT", "/v1/schedules/s", "", ``, false, 400, codeInvalid, ""},
	{"get unknown schedule", "GET", "/v1/schedules/nope", "-", ``, false, 404, codeNotFound, `schedule "nope" not found`},
	{"delete unknown schedule", "DELETE", "/v1/schedules/nope", "-", ``, false, 404, codeNotFound, `schedule "nope" not found`},
	{"pause unknown schedule", "POST", "/v1/schedules/nope/pause", "-", ``, false, 404, codeNotFound, `schedule "nope" not found`},
	{"resume unknown schedule", "POST", "/v1/schedules/nope/resume", "-", ``, false, 404, codeNotFound, `schedule "nope" not found`},
	{"POST on a schedule", "POST", "/v1/schedules/s", "", `{}`, false, 405, codeMethodNotAllowed, "PUT"},
}

// seedT fills topic "t" and returns the lease of res1.
func seedT(t *testing.T, e *env) string {
	t.Helper()
	e.enqueue("t", map[string]any{"id": "res1", "priority": 1000, "ttr_ms": 600000})
	res := e.reserveOne("t", nil)
	if res.ID != "res1" {
		t.Fatalf("reserved %q, want res1", res.ID)
	}
	e.enqueue("t", map[string]any{"id": "dead1", "priority": 1000, "max_retries": 0})
	d := e.reserveOne("t", nil)
	e.call("POST", "/v1/topics/t/jobs/dead1/nack", map[string]any{"lease": d.Lease, "error": "boom"}).want(t, http.StatusNoContent)
	e.enqueue("t", map[string]any{"id": "ready1", "body": map[string]int{"n": 1}})
	e.enqueue("t", map[string]any{"id": "delayed1", "delay_ms": 3600000})
	return res.Lease
}

// snapshot is everything the bad requests could change: every topic's counts, the schedules and
// the seed jobs.
func snapshot(t *testing.T, e *env) string {
	t.Helper()
	topics := decode[struct {
		Topics []apiv1.TopicStats `json:"topics"`
	}](t, e.call("GET", "/v1/topics", nil).want(t, http.StatusOK)).Topics
	for i := range topics {
		topics[i].OldestReadyMs = 0 // grows with time
	}
	var b strings.Builder
	list, err := json.Marshal(topics)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "%s\n", list)
	fmt.Fprintf(&b, "%s\n", e.call("GET", "/v1/schedules", nil).want(t, http.StatusOK).body)
	for _, id := range []string{"ready1", "delayed1", "res1", "dead1"} {
		fmt.Fprintf(&b, "%s\n", e.call("GET", "/v1/topics/t/jobs/"+id, nil).want(t, http.StatusOK).body)
	}
	return b.String()
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lease := seedT(t, e)
	before := snapshot(t, e)
	if len(badCases) < 40 {
		t.Fatalf("only %d bad cases", len(badCases))
	}
	for _, c := range badCases {
		t.Run(c.name, func(t *testing.T) {
			base := e.url
			if c.push {
				base = e.pushURL
			}
			ctype := c.ctype
			switch ctype {
			case "":
				ctype = "application/json"
			case "-":
				ctype = ""
			}
			r := e.badRequests().raw(base, c.method, c.path, ctype, strings.ReplaceAll(c.body, "{lease}", lease))
			got := r.wantError(t, c.status, c.code)
			if !strings.Contains(got.Message, c.msg) {
				t.Errorf("message %q does not mention %q", got.Message, c.msg)
			}
			if strings.Contains(got.Message, "s3cret") {
				t.Errorf("message %q echoes a password", got.Message)
			}
			if c.status == http.StatusMethodNotAllowed && r.header.Get("Allow") == "" {
				t.Errorf("405 without an Allow header")
			}
			if diff := cmp.Diff(before, snapshot(t, e)); diff != "" {
				t.Errorf("the request changed the store (-before +after):\n%s", diff)
			}
		})
	}
}

// TestBatchItemErrors checks that bad items fail alone, in request order.
func TestBatchItemErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enqueue("b", map[string]any{"id": "taken", "body": "first"})
	body := `{"jobs": [
		{"id": "one", "body": {"k": [1, 2]}},
		{"id": "two", "ttr_ms": 99},
		{"id": "taken"},
		{"id": "three", "unknown": 1},
		{"id": "four", "body": ` + bigBody + `},
		{"id": "one"},
		{"id": "five", "delay_ms": "5"},
		null,
		{"id": "six", "callback_url": "https://example.com/"},
		{"id": "seven", "body_base64": "AAE="}
	]}`
	r := e.badRequests().raw(e.url, "POST", "/v1/topics/b/jobs/batch", "application/json", body).want(t, http.StatusOK)
	var res struct {
		Results []struct {
			Job   *apiv1.Job   `json:"job"`
			Error *apiv1.Error `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatal(err)
	}
	want := []string{"one", codeInvalid, codeExists, codeInvalid, codeTooLarge, codeExists, codeInvalid, codeInvalid, codeInvalid, "seven"}
	var got []string
	for _, it := range res.Results {
		switch {
		case it.Job != nil && it.Error == nil:
			got = append(got, it.Job.ID)
		case it.Error != nil && it.Job == nil:
			got = append(got, it.Error.Code)
		default:
			t.Fatalf("result with neither or both of job and error: %s", r.body)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("results (-want +got):\n%s", diff)
	}
	st := decode[apiv1.TopicStats](t, e.call("GET", "/v1/topics/b", nil).want(t, http.StatusOK))
	if st.Ready != 3 {
		t.Fatalf("topic b has %d ready jobs, want 3 (taken, one, seven)", st.Ready)
	}

	// A batch with no valid job stores nothing, not even its topic.
	e.badRequests().raw(e.url, "POST", "/v1/topics/nobatch/jobs/batch", "application/json", `{"jobs": [{"ttr_ms": 1}]}`).want(t, http.StatusOK)
	e.call("GET", "/v1/topics/nobatch", nil).wantError(t, http.StatusNotFound, codeNotFound)
}
