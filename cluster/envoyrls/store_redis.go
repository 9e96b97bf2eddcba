package envoyrls

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// RedisStore keeps the fixed-window counters in Redis (a single server,
// Redis Cluster or a sentinel-managed master), so every replica of the
// service shares them. One request's counters go out in one pipeline:
// INCRBY then EXPIRE per counter, as envoyproxy/ratelimit sends them, so
// both count alike and agree on every key. On a cluster the pipeline is
// split per node, one round trip to each node holding one of the keys.
type RedisStore struct {
	rdb redis.UniversalClient
}

var _ Store = (*RedisStore)(nil)

// NewRedisStore returns a store over rdb; the caller closes rdb.
func NewRedisStore(rdb redis.UniversalClient) *RedisStore { return &RedisStore{rdb: rdb} }

// Incr implements Store. The expiry is renewed at each hit: a counter
// lives a unit past its last hit, longer than its window, which is enough
// since the next window has another key.
func (s *RedisStore) Incr(ctx context.Context, incrs []Incr) error {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(incrs))
	for i := range incrs {
		cmds[i] = pipe.IncrBy(ctx, incrs[i].Key, int64(incrs[i].Hits))
		pipe.Expire(ctx, incrs[i].Key, secondsDuration(incrs[i].TTL))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	for i, c := range cmds {
		n := c.Val()
		if n < 0 {
			return fmt.Errorf("redis: counter %q holds %d", incrs[i].Key, n)
		}
		incrs[i].Count = uint64(n)
	}
	return nil
}
