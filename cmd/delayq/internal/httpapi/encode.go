package httpapi

import (
	"net/http"
	"strconv"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// internalErrorBody is the answer when an answer cannot be encoded.
const internalErrorBody = `{"error":{"code":"internal","message":"internal error"}}`

// writeJSON writes v as the response with status.
func (a *api) writeJSON(w http.ResponseWriter, status int, v any) {
	_ = a.writeJSONTo(w, status, v)
}

// writeJSONTo is writeJSON that reports whether the answer could be written.
func (a *api) writeJSONTo(w http.ResponseWriter, status int, v any) error {
	body, err := apiv1.Marshal(v)
	if err != nil {
		a.log.Error("httpapi: encoding a response", "err", err)
		status = http.StatusInternalServerError
		body = []byte(internalErrorBody)
	}
	body = append(body, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, err = w.Write(body)
	return err
}
