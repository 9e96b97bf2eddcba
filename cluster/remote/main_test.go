package remote

import (
	"log/slog"
	"os"
	"testing"

	"github.com/flowgate/flowgate/cluster"
	"github.com/redis/go-redis/v9"
)

// TestMain keeps go-redis's own lines (dial failures of the Redis the
// fault tests kill) off the test output, as a program would.
func TestMain(m *testing.M) {
	redis.SetLogger(cluster.RedisLogger(slog.New(slog.DiscardHandler), slog.LevelDebug))
	os.Exit(m.Run())
}
