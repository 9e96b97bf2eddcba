// Package testbin owns finding the server binaries flowgate's tests run
// (redis-server, etcd), and the rule shared by every such test: skip with a
// clear message when the binary is missing, but fail when the matching
// FLOWGATE_REQUIRE_* variable is 1, so CI cannot pass by skipping.
package testbin

import (
	"os"
	"os/exec"
	"testing"
)

// Binary says how to find one server binary.
type Binary struct {
	// Override is the environment variable that names the binary's path
	// (REDIS_SERVER); a path it names that does not exist is a broken
	// setup, and fails the test whatever Require says.
	Override string
	// Names are tried in order with exec.LookPath.
	Names []string
	// Require is the variable that turns a skip into a failure when "1".
	Require string
	// Missing is what the test says when the binary cannot be found.
	Missing string
}

// Find returns the binary's path, or skips t (fails it when b.Require is 1
// or b.Override names a missing file).
func (b Binary) Find(t testing.TB) string {
	t.Helper()
	path, reason, fatal := b.Locate(os.Getenv, exec.LookPath)
	switch {
	case path != "":
		return path
	case fatal:
		t.Fatal(reason)
	default:
		t.Skip(reason)
	}
	return ""
}

// Locate decides where the binary is, or why a test cannot run and whether
// that must fail it rather than skip it. Environment and PATH lookup are
// arguments so the decision is testable without uninstalling anything.
func (b Binary) Locate(getenv func(string) string, lookPath func(string) (string, error)) (path, reason string, fatal bool) {
	if p := getenv(b.Override); b.Override != "" && p != "" {
		found, err := lookPath(p)
		if err != nil {
			return "", b.Override + "=" + p + ": " + err.Error(), true
		}
		return found, "", false
	}
	for _, name := range b.Names {
		if found, err := lookPath(name); err == nil {
			return found, "", false
		}
	}
	return "", b.Missing, getenv(b.Require) == "1"
}
