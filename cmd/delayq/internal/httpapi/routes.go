package httpapi

import "net/http"

// route is one endpoint: a method and a path in OpenAPI's template syntax, which is also the
// router's ("/v1/topics/{topic}").
type route struct {
	method string
	path   string
	handle handlerFunc
}

// pattern returns the route's pattern for http.ServeMux; "/" matches the root alone.
func (rt route) pattern() string {
	if rt.path == "/" {
		return rt.method + " /{$}"
	}
	return rt.method + " " + rt.path
}

// routes is the one table of the API's endpoints. openapi.json describes exactly these.
func routes() []route {
	return []route{
		{http.MethodGet, "/", (*api).root},
		{http.MethodGet, "/healthz", (*api).healthz},
		{http.MethodGet, "/readyz", (*api).readyz},
		{http.MethodGet, "/metrics", (*api).metrics},
		{http.MethodGet, "/v1/openapi.json", (*api).openAPI},

		{http.MethodGet, "/v1/topics", (*api).listTopics},
		{http.MethodGet, "/v1/topics/{topic}", (*api).getTopic},
		{http.MethodDelete, "/v1/topics/{topic}", (*api).deleteTopic},
		{http.MethodPost, "/v1/topics/{topic}/pause", (*api).pauseTopic},
		{http.MethodPost, "/v1/topics/{topic}/resume", (*api).resumeTopic},
		{http.MethodPut, "/v1/topics/{topic}/limits", (*api).setLimits},
		{http.MethodDelete, "/v1/topics/{topic}/limits", (*api).clearLimits},
		{http.MethodPut, "/v1/topics/{topic}/defaults", (*api).setDefaults},

		{http.MethodPost, "/v1/topics/{topic}/jobs", (*api).enqueue},
		{http.MethodPost, "/v1/topics/{topic}/jobs/batch", (*api).enqueueBatch},
		{http.MethodGet, "/v1/topics/{topic}/jobs/{id}", (*api).getJob},
		{http.MethodDelete, "/v1/topics/{topic}/jobs/{id}", (*api).cancelJob},
		{http.MethodPatch, "/v1/topics/{topic}/jobs/{id}", (*api).reschedule},

		{http.MethodPost, "/v1/topics/{topic}/reserve", (*api).reserve},
		{http.MethodPost, "/v1/topics/{topic}/jobs/{id}/ack", (*api).ack},
		{http.MethodPost, "/v1/topics/{topic}/jobs/{id}/nack", (*api).nack},
		{http.MethodPost, "/v1/topics/{topic}/jobs/{id}/touch", (*api).touch},
		{http.MethodPost, "/v1/topics/{topic}/jobs/{id}/release", (*api).release},

		{http.MethodGet, "/v1/topics/{topic}/dead", (*api).listDead},
		{http.MethodDelete, "/v1/topics/{topic}/dead", (*api).deleteDead},
		{http.MethodPost, "/v1/topics/{topic}/dead/requeue", (*api).requeueDead},

		{http.MethodGet, "/v1/history", (*api).listHistory},
		{http.MethodGet, "/v1/topics/{topic}/jobs/{id}/history", (*api).jobHistory},

		{http.MethodGet, "/v1/schedules", (*api).listSchedules},
		{http.MethodGet, "/v1/schedules/{name}", (*api).getSchedule},
		{http.MethodPut, "/v1/schedules/{name}", (*api).putSchedule},
		{http.MethodDelete, "/v1/schedules/{name}", (*api).deleteSchedule},
		{http.MethodPost, "/v1/schedules/{name}/pause", (*api).pauseSchedule},
		{http.MethodPost, "/v1/schedules/{name}/resume", (*api).resumeSchedule},
	}
}
