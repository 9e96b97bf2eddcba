package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestRedisLogger: a go-redis line reaches our logger at the level asked
// for, marked source=go-redis and without go-redis's "redis: " prefix; a
// level the handler filters out, or a nil logger, drops it.
func TestRedisLogger(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	RedisLogger(l, slog.LevelInfo).Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts: %v", 1, "refused")
	got := buf.String()
	if !strings.Contains(got, `msg="connection pool: failed to dial after 1 attempts: refused"`) || !strings.Contains(got, "source=go-redis") || !strings.Contains(got, "level=INFO") {
		t.Fatalf("logged %q", got)
	}
	buf.Reset()
	RedisLogger(l, slog.LevelDebug).Printf(context.Background(), "redis: dropped")
	RedisLogger(nil, slog.LevelError).Printf(context.Background(), "redis: dropped")
	if buf.Len() != 0 {
		t.Fatalf("filtered lines logged: %q", buf.String())
	}
}
