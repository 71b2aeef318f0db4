package delayq

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every relative link of the README and of docs/ points at a file of the repository: readers
// follow them from a checkout and on the code host alike.
func TestDocsLinksPointIntoTheRepository(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "README.md", "BENCHMARKS.md")
	fence := regexp.MustCompile("(?s)```.*?```")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllSubmatch(fence.ReplaceAll(text, nil), -1) {
			target := string(m[1])
			if strings.HasPrefix(target, "#") || regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue // an anchor of the page, or another site
			}
			path, _, _ := strings.Cut(target, "#")
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), path)); err != nil {
				t.Errorf("%s links to %s, which is not in the repository", page, target)
			}
		}
	}
}
