package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestSelfTest runs the example's self-test in-process: it fails when a
// limit did not act, and the output names what happened.
func TestSelfTest(t *testing.T) {
	if testing.Short() {
		t.Skip("drives real loopback traffic for about a second")
	}
	var out bytes.Buffer
	if err := runSelfTest(&out, nil); err != nil {
		t.Fatalf("self-test: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"bob, 3 requests: 3 passed, 0 blocked",
		"5 requests, each with a different X-Forwarded-For: 3 passed, 2 blocked (the peer is not a trusted proxy",
		`RateLimit-Policy: "orders-read-per-user";q=5;w=1`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// With the loopback peer trusted, X-Forwarded-For names the client, so the
// five "different clients" each get their own quota.
func TestSelfTestTrustedProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("drives real loopback traffic")
	}
	var out bytes.Buffer
	err := runSelfTest(&out, []string{"127.0.0.0/8"})
	if err == nil || !strings.Contains(err.Error(), "per-IP: nothing was blocked") {
		t.Fatalf("self-test with a trusted loopback: %v, want the per-IP scenario to find nothing blocked\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "5 passed, 0 blocked") {
		t.Errorf("output:\n%s", out.String())
	}
}

// Redirected output self-tests, and says so; -serve and -selftest win.
func TestModeChoice(t *testing.T) {
	for _, c := range []struct {
		selftest, serve, tty bool
		self, explained      bool
	}{
		{tty: true},
		{tty: false, self: true, explained: true},
		{serve: true, tty: false},
		{selftest: true, tty: true, self: true},
		{selftest: true, serve: true, self: true},
	} {
		self, why := selfTesting(c.selftest, c.serve, c.tty)
		if self != c.self || (why != "") != c.explained {
			t.Errorf("%+v: self-test %v, explanation %q", c, self, why)
		}
	}
}
