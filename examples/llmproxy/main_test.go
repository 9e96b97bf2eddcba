package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun: the heavy tenant is held to its token budget (estimates settled
// at the usage the model reported), the light one is not refused.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "ok: acme held to") {
		t.Fatalf("output:\n%s", out.String())
	}
	t.Log(out.String())
}
