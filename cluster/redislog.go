package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// RedisLogging receives go-redis's own log lines (see RedisLogger).
type RedisLogging struct {
	l     *slog.Logger
	level slog.Level
}

// RedisLogger returns a logger for redis.SetLogger that sends go-redis's
// own lines ("failed to dial", pool notices) to l at level, marked
// source=go-redis, instead of to stderr:
//
//	redis.SetLogger(cluster.RedisLogger(logger, slog.LevelDebug))
//
// go-redis has one logger per process, so this is the program's choice,
// never the token server's: `flowgate serve` makes it at Debug, as the
// server's own per-node outage lines (one at the start, a summary every
// 10s, one at the end) already say what those lines would, once. A nil l
// drops them.
func RedisLogger(l *slog.Logger, level slog.Level) RedisLogging {
	return RedisLogging{l: l, level: level}
}

// Printf logs one go-redis line.
func (r RedisLogging) Printf(ctx context.Context, format string, v ...any) {
	if r.l == nil || !r.l.Enabled(ctx, r.level) {
		return
	}
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	r.l.LogAttrs(ctx, r.level, msg, slog.String("source", "go-redis"))
}
