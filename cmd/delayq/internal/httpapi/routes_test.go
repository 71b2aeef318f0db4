package httpapi

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// docs/http-api.md, the readable page of the API, has a section for every route the server
// serves, and none for a route it does not.
func TestHTTPAPIDocListsEveryRoute(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../../docs/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^### ([A-Z]+ \S+)$`).FindAllSubmatch(doc, -1) {
		listed = append(listed, string(m[1]))
	}
	var served []string
	for _, rt := range routes() {
		served = append(served, rt.method+" "+rt.path)
		if !slices.Contains(listed, rt.method+" "+rt.path) {
			t.Errorf("docs/http-api.md has no section \"### %s %s\"", rt.method, rt.path)
		}
	}
	for _, l := range listed {
		if !slices.Contains(served, l) {
			t.Errorf("docs/http-api.md describes %s, which the server does not serve", l)
		}
	}
}
