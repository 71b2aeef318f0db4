package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/delayq/delayq/internal/apiv1"
)

// Batch items are held to exact names and single keys too, each item on its own; a job's body
// is the producer's JSON, kept as given, whatever its keys.
func TestBatchItemKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.badRequests().raw(e.url, "POST", "/v1/topics/keys/jobs/batch", "application/json",
		`{"jobs": [{"Id": "a"}, {"id": "b", "id": "c"}, {"id": "d", "body": {"K": 1, "k": 2, "k": 3}}]}`)
	res := decode[struct {
		Results []struct {
			Job   *apiv1.Job   `json:"job"`
			Error *apiv1.Error `json:"error"`
		} `json:"results"`
	}](t, r.want(t, http.StatusOK)).Results
	if len(res) != 3 {
		t.Fatalf("%d results", len(res))
	}
	for i, want := range []string{"exact", "twice"} {
		if res[i].Error == nil || res[i].Error.Code != codeInvalid || !strings.Contains(res[i].Error.Message, want) {
			t.Errorf("item %d: %+v, want invalid_argument mentioning %q", i, res[i].Error, want)
		}
	}
	if res[2].Job == nil || string(res[2].Job.Body) != `{"K":1,"k":2,"k":3}` {
		t.Errorf("item 2: %+v, want the body kept as given", res[2])
	}
}
