package cluster

import (
	"log/slog"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestMain keeps go-redis's own lines (dial failures of the nodes the
// fault tests kill) off the test output, as a program would with
// RedisLogger.
func TestMain(m *testing.M) {
	redis.SetLogger(RedisLogger(slog.New(slog.DiscardHandler), slog.LevelDebug))
	os.Exit(m.Run())
}
