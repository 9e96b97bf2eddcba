package envoyrls

import (
	"os"
	"strings"
	"testing"
)

// TestDocsConfigBlocks: every ```yaml block of docs/envoy.md that starts
// with "domain:" is a configuration this package loads.
func TestDocsConfigBlocks(t *testing.T) {
	b, err := os.ReadFile("../../docs/envoy.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(b), "```yaml\n")[1:]
	n := 0
	for _, blk := range blocks {
		body, _, _ := strings.Cut(blk, "```")
		if !strings.HasPrefix(body, "domain:") {
			continue
		}
		n++
		if _, err := Parse(File{Name: "docs/envoy.md", Data: []byte(body)}); err != nil {
			t.Errorf("a config in docs/envoy.md does not load: %v\n%s", err, body)
		}
	}
	if n == 0 {
		t.Fatal("no configuration block found in docs/envoy.md")
	}
}
