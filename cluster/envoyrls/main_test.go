package envoyrls

import (
	"log/slog"
	"os"
	"testing"

	"github.com/flowgate/flowgate/cluster"
	"github.com/redis/go-redis/v9"
)

// TestMain keeps go-redis's own lines (dial failures after the tests kill
// Redis) off the test output, as serve does with cluster.RedisLogger.
func TestMain(m *testing.M) {
	redis.SetLogger(cluster.RedisLogger(slog.New(slog.DiscardHandler), slog.LevelDebug))
	os.Exit(m.Run())
}
