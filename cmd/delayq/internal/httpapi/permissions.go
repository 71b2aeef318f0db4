package httpapi

import "github.com/delayq/delayq/cmd/delayq/internal/access"

// permissions is the one table of what each route of the table routes does, which decides the
// roles that may call it (access.Op); a token's topics bind it on every route that names a
// topic. New refuses a route without an entry, and a test holds the two tables together.
var permissions = map[string]access.Op{
	"GET /":                access.Public,
	"GET /healthz":         access.Public,
	"GET /readyz":          access.Public,
	"GET /metrics":         access.Read,
	"GET /v1/openapi.json": access.AnyToken,

	"GET /v1/topics":                   access.Read,
	"GET /v1/topics/{topic}":           access.Read,
	"DELETE /v1/topics/{topic}":        access.Operate,
	"POST /v1/topics/{topic}/pause":    access.Operate,
	"POST /v1/topics/{topic}/resume":   access.Operate,
	"PUT /v1/topics/{topic}/limits":    access.Operate,
	"DELETE /v1/topics/{topic}/limits": access.Operate,
	"PUT /v1/topics/{topic}/defaults":  access.Operate,

	"POST /v1/topics/{topic}/jobs":        access.Produce,
	"POST /v1/topics/{topic}/jobs/batch":  access.Produce,
	"GET /v1/topics/{topic}/jobs/{id}":    access.GetJob,
	"DELETE /v1/topics/{topic}/jobs/{id}": access.Produce,
	"PATCH /v1/topics/{topic}/jobs/{id}":  access.Produce,

	"POST /v1/topics/{topic}/reserve":           access.Consume,
	"POST /v1/topics/{topic}/jobs/{id}/ack":     access.Consume,
	"POST /v1/topics/{topic}/jobs/{id}/nack":    access.Consume,
	"POST /v1/topics/{topic}/jobs/{id}/touch":   access.Consume,
	"POST /v1/topics/{topic}/jobs/{id}/release": access.Consume,

	"GET /v1/topics/{topic}/dead":          access.ReadDead,
	"DELETE /v1/topics/{topic}/dead":       access.Consume,
	"POST /v1/topics/{topic}/dead/requeue": access.Consume,

	"GET /v1/history":                          access.Read,
	"GET /v1/topics/{topic}/jobs/{id}/history": access.Read,

	"GET /v1/schedules":                access.Read,
	"GET /v1/schedules/{name}":         access.Read,
	"PUT /v1/schedules/{name}":         access.Operate,
	"DELETE /v1/schedules/{name}":      access.Operate,
	"POST /v1/schedules/{name}/pause":  access.Operate,
	"POST /v1/schedules/{name}/resume": access.Operate,
}

// permissionOf returns the Op of rt.
func permissionOf(rt route) (access.Op, bool) {
	op, ok := permissions[rt.method+" "+rt.path]
	return op, ok
}
