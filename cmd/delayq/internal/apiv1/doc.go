// Package apiv1 is the wire form of delayq's HTTP API, version 1: the request and answer
// bodies that docs and the OpenAPI document describe, with their JSON encoding, and the body
// POSTed to a push job's callback URL. The server, the Go client and the command line all
// speak through these types, so the JSON form of a job is written in one place.
//
// Requests keep "not given" apart from zero with pointer fields, and keep times as the text
// the caller sent, so that the server can refuse a bad one by name. Answers carry times as
// Time, written in RFC 3339 UTC with milliseconds.
package apiv1
