package redistest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// missingMessage is what a test says when redis-server cannot be found.
const missingMessage = "redis-server not found; install it (apt-get install redis-server) or run make test"

// requireServer returns the redis-server path, or skips t (fails it when
// FLOWGATE_REQUIRE_REDIS=1 or REDIS_SERVER names a missing file).
func requireServer(t testing.TB) string {
	t.Helper()
	path, reason, fatal := locate(os.Getenv, exec.LookPath)
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

// locate decides where redis-server is, or why a test cannot run and whether
// that must fail it rather than skip it. Environment and PATH lookup are
// arguments so the decision is testable without uninstalling Redis.
func locate(getenv func(string) string, lookPath func(string) (string, error)) (path, reason string, fatal bool) {
	if p := getenv("REDIS_SERVER"); p != "" {
		found, err := lookPath(p)
		if err != nil {
			// An explicit path that is wrong is a broken setup, never a skip.
			return "", "REDIS_SERVER=" + p + ": " + err.Error(), true
		}
		return found, "", false
	}
	found, err := lookPath("redis-server")
	if err != nil {
		return "", missingMessage, getenv("FLOWGATE_REQUIRE_REDIS") == "1"
	}
	return found, "", false
}

// cliPath finds redis-cli: REDIS_CLI if set, else beside the redis-server in
// use (so REDIS_SERVER pointing at a build tree gets its matching cli), else PATH.
func cliPath(server string) (string, error) {
	if p := os.Getenv("REDIS_CLI"); p != "" {
		return exec.LookPath(p)
	}
	sibling := filepath.Join(filepath.Dir(server), "redis-cli")
	if p, err := exec.LookPath(sibling); err == nil {
		return p, nil
	}
	return exec.LookPath("redis-cli")
}
