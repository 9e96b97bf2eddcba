package redistest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/flowgate/flowgate/internal/testing/testbin"
)

// missingMessage is what a test says when redis-server cannot be found.
const missingMessage = "redis-server not found; install it (apt-get install redis-server) or run make test"

// redisServer is how tests find redis-server.
var redisServer = testbin.Binary{Override: "REDIS_SERVER", Names: []string{"redis-server"},
	Require: "FLOWGATE_REQUIRE_REDIS", Missing: missingMessage}

// requireServer returns the redis-server path, or skips t (fails it when
// FLOWGATE_REQUIRE_REDIS=1 or REDIS_SERVER names a missing file).
func requireServer(t testing.TB) string {
	t.Helper()
	return redisServer.Find(t)
}

// locate decides where redis-server is; see testbin.Binary.Locate.
func locate(getenv func(string) string, lookPath func(string) (string, error)) (path, reason string, fatal bool) {
	return redisServer.Locate(getenv, lookPath)
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
