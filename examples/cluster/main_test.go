package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRun runs the example for a second: the instances together admit the
// limit exactly, through a replica failover, and it exits 0.
func TestRun(t *testing.T) {
	var out strings.Builder
	start := time.Now()
	code := run(context.Background(), &out, time.Second)
	t.Logf("in %v:\n%s", time.Since(start), out.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("FLOWGATE_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-server is not on PATH, and FLOWGATE_REQUIRE_REDIS=1")
		}
		if !strings.Contains(out.String(), "skipping") {
			t.Fatal("no redis-server and no skip message")
		}
		t.Skip("redis-server not on PATH")
	}
	m := regexp.MustCompile(`admitted in all: (\d+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatal("no total printed")
	}
	// How much 12 callers ask for in a second depends on the machine (and
	// -race); what they get never exceeds the limit.
	if n, _ := strconv.Atoi(m[1]); n > 2000 || n == 0 {
		t.Fatalf("admitted %d in all, want 1..2000", n)
	}
	if got := strings.Count(out.String(), "instance-"); got != 3 {
		t.Fatalf("%d instance lines, want 3", got)
	}
}
