package envoyrls

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/internal/testing/judge"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// hammer runs workers goroutines of each Incr calls on s, each call
// counting one hit on the shared key "all" and one on the worker's own;
// it returns every count "all" was answered with, and the first error.
func hammer(s Store, prefix string, workers, each int) ([]uint64, error) {
	var mu sync.Mutex
	var seen []uint64
	var first error
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := prefix + "w" + strconv.Itoa(w)
			for range each {
				in := []Incr{{Key: prefix + "all", Hits: 1, Now: 100, TTL: 60}, {Key: own, Hits: 1, Now: 100, TTL: 60}}
				err := s.Incr(context.Background(), in)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				seen = append(seen, in[0].Count)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return seen, first
}

// checkExact: every call got a distinct count of "all", 1 to n, and
// Redis holds n there and each worker's calls under its own key.
func checkExact(t *testing.T, rdb redis.UniversalClient, prefix string, seen []uint64, workers, each int) {
	t.Helper()
	n := workers * each
	got := make([]bool, n+1)
	for _, c := range seen {
		if c == 0 || c > uint64(n) || got[c] {
			t.Fatalf("count %d answered twice or out of 1..%d", c, n)
		}
		got[c] = true
	}
	if v, err := rdb.Get(context.Background(), prefix+"all").Int(); err != nil || v != n {
		t.Errorf("%sall = %d, %v; want %d", prefix, v, err, n)
	}
	for w := range workers {
		if v, err := rdb.Get(context.Background(), prefix+"w"+strconv.Itoa(w)).Int(); err != nil || v != each {
			t.Errorf("%sw%d = %d, %v; want %d", prefix, w, v, err, each)
		}
	}
}

// redisInfo reads the integer fields of INFO section from a server.
func redisInfo(t *testing.T, rdb *redis.Client, section string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for line := range strings.Lines(rdb.Info(context.Background(), section).Val()) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
			out[k] = n
		}
	}
	return out
}

// TestRedisStoreBatchesConcurrentRequests: 32 callers of 200 requests
// each share pipelines (the store's count and Redis' own count of the
// reads it served both show fewer round trips than requests), every
// count is exact, and Redis ran exactly an INCRBY and an EXPIRE per
// counter. Sharing depends on timing (callers queueing while a pipeline
// is out); a try where fewer than half shared is run again.
func TestRedisStoreBatchesConcurrentRequests(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	defer rdb.Close()
	const workers, each = 32, 200
	judge.Retry(t, 3, func(try int) error {
		s := redisStore(t, rdb)
		rdb.FlushAll(context.Background())
		rdb.ConfigResetStat(context.Background())
		prefix := "try" + strconv.Itoa(try) + ":"
		seen, err := hammer(s, prefix, workers, each)
		if err != nil {
			t.Fatal(err)
		}
		checkExact(t, rdb, prefix, seen, workers, each)
		st := s.Stats()
		reads := redisInfo(t, rdb, "stats")["total_reads_processed"]
		t.Logf("%d requests in %d pipelines; redis served %d reads", st.Requests, st.Pipelines, reads)
		if st.Requests != workers*each || st.Commands != 4*workers*each || st.InFlight != 0 {
			t.Fatalf("stats %+v, want %d requests of 4 commands, none in flight", st, workers*each)
		}
		if calls := commandCalls(t, rdb); calls["incrby"] != 2*workers*each || calls["expire"] != 2*workers*each {
			t.Fatalf("redis ran %v, want %d INCRBY and as many EXPIRE", calls, 2*workers*each)
		}
		if st.Pipelines*2 > st.Requests || reads*2 > int64(st.Requests) {
			return fmt.Errorf("%d requests took %d pipelines and %d reads of Redis: want fewer than half: %w", st.Requests, st.Pipelines, reads, judge.ErrUnjudged)
		}
		return nil
	})
}

// commandCalls reads INFO commandstats: calls per command.
func commandCalls(t *testing.T, rdb *redis.Client) map[string]int {
	t.Helper()
	out := map[string]int{}
	for line := range strings.Lines(rdb.Info(context.Background(), "commandstats").Val()) {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		out[name], _ = strconv.Atoi(n)
	}
	return out
}

// TestRedisClusterStoreBatches: on a 3-master Redis Cluster, concurrent
// requests whose counters sit on every node share pipelines (go-redis
// splits each per node) and every count is exact.
func TestRedisClusterStoreBatches(t *testing.T) {
	c := redistest.StartCluster(t)
	rdb := c.Client()
	defer rdb.Close()
	const workers, each = 16, 100
	judge.Retry(t, 3, func(try int) error {
		s := redisStore(t, rdb)
		prefix := "try" + strconv.Itoa(try) + ":"
		seen, err := hammer(s, prefix, workers, each)
		if err != nil {
			t.Fatal(err)
		}
		checkExact(t, rdb, prefix, seen, workers, each)
		nodes := map[string]bool{}
		for w := range workers {
			nodes[c.NodeFor(prefix+"w"+strconv.Itoa(w)).Addr] = true
		}
		if len(nodes) < 2 {
			t.Fatalf("the workers' counters sat on %d node(s); the test wants them spread", len(nodes))
		}
		st := s.Stats()
		t.Logf("%d requests in %d pipelines over %d nodes", st.Requests, st.Pipelines, len(nodes))
		if st.Pipelines*2 > st.Requests {
			return fmt.Errorf("%d requests took %d pipelines: want fewer than half: %w", st.Requests, st.Pipelines, judge.ErrUnjudged)
		}
		return nil
	})
}

// patientClient is a second client of srv whose reads wait 30s, longer
// than a test keeps Redis paused on a loaded machine.
func patientClient(srv *redistest.Server) *redis.Client {
	o := srv.ClientOptions()
	o.ReadTimeout = 30 * time.Second
	return srv.NewClient(o)
}

// pauseWrites holds every write command Redis receives (CLIENT PAUSE
// WRITE, from ctl) until the returned func is called: a pipeline stays in
// flight as long as the test needs.
func pauseWrites(t *testing.T, ctl *redis.Client) (unpause func()) {
	t.Helper()
	if err := ctl.Do(context.Background(), "CLIENT", "PAUSE", 60000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	return func() { ctl.Do(context.Background(), "CLIENT", "UNPAUSE") }
}

// waitFor polls cond, a state of the store's goroutines, until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting, after 20s, for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (s *RedisStore) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

func one(key string) []Incr { return []Incr{{Key: key, Hits: 1, Now: 100, TTL: 60}} }

// TestRedisStoreCallerLeaves: a caller whose context ends returns at
// once, while its counters wait in the queue or are in flight; the
// counters in flight are still counted, the queued ones are not sent.
func TestRedisStoreCallerLeaves(t *testing.T) {
	srv := redistest.Start(t)
	ctl := srv.Client()
	rdb := patientClient(srv)
	s := redisStore(t, rdb, WithPipelines(1))
	unpause := pauseWrites(t, ctl)
	defer unpause()
	ctxA, cancelA := context.WithCancel(context.Background())
	errA := make(chan error, 1)
	go func() { errA <- s.Incr(ctxA, one("a")) }()
	waitFor(t, "a's pipeline in flight", func() bool { return s.Stats().InFlight == 1 })

	ctxB, cancelB := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelB()
	if err := s.Incr(ctxB, one("b")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued caller past its deadline: got %v, want context.DeadlineExceeded", err)
	}
	if st := s.Stats(); st.InFlight != 1 {
		t.Fatalf("b returned when a's pipeline ended (%+v): it waited for the sender", st)
	}
	cancelA()
	if err := <-errA; !errors.Is(err, context.Canceled) {
		t.Fatalf("caller in flight, cancelled: got %v, want context.Canceled", err)
	}
	if st := s.Stats(); st.InFlight != 1 || st.Pipelines != 0 {
		t.Fatalf("a returned when its pipeline ended (%+v)", st)
	}
	unpause()
	in := one("a")
	if err := s.Incr(context.Background(), in); err != nil || in[0].Count != 2 {
		t.Fatalf("after a's pipeline: count %d, %v; want 2 (a's hit counted though a left)", in[0].Count, err)
	}
	if n := ctl.Exists(context.Background(), "b").Val(); n != 0 {
		t.Errorf("b, whose caller left while queued, was sent")
	}
}

// senders counts the goroutines running a RedisStore's sender loop.
func senders() int {
	buf := make([]byte, 1<<20)
	n := 0
	for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "envoyrls.(*RedisStore).send") {
			n++
		}
	}
	return n
}

// TestRedisStoreClose: Close fails the queued requests, lets the ones in
// flight finish, and returns with no sender left; Incr then fails.
func TestRedisStoreClose(t *testing.T) {
	srv := redistest.Start(t)
	ctl := srv.Client()
	rdb := patientClient(srv)
	before := senders()
	s := NewRedisStore(rdb, WithPipelines(3))
	waitFor(t, "3 senders running", func() bool { return senders()-before == 3 })
	unpause := pauseWrites(t, ctl)
	defer unpause()
	errs := make(chan error, 4)
	for i := range 3 { // one at a time: each in a pipeline of its own, every sender busy
		go func() { errs <- s.Incr(context.Background(), one("f"+strconv.Itoa(i))) }()
		waitFor(t, "a pipeline in flight", func() bool { return s.Stats().InFlight == int64(i+1) })
	}
	go func() { errs <- s.Incr(context.Background(), one("queued")) }()
	waitFor(t, "a request queued", func() bool { return s.queued() == 1 })
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	if err := <-errs; !errors.Is(err, ErrStoreClosed) {
		t.Fatalf("first answer after Close: got %v, want the queued request's ErrStoreClosed", err)
	}
	unpause()
	for range 3 {
		if err := <-errs; err != nil {
			t.Errorf("request in flight at Close: %v", err)
		}
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if got := senders() - before; got != 0 {
		t.Errorf("%d senders left after Close", got)
	}
	if err := s.Incr(context.Background(), one("late")); !errors.Is(err, ErrStoreClosed) {
		t.Errorf("Incr after Close: got %v, want ErrStoreClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestRedisStoreDownFailsEveryRequest: Redis dies with one pipeline in
// flight and 16 requests queued behind it: each gets an error, the 16
// from the one pipeline they shared.
func TestRedisStoreDownFailsEveryRequest(t *testing.T) {
	srv := redistest.Start(t)
	ctl := srv.Client()
	rdb := patientClient(srv)
	s := redisStore(t, rdb, WithPipelines(1))
	if err := s.Incr(context.Background(), one("warm")); err != nil {
		t.Fatal(err)
	}
	pauseWrites(t, ctl)
	const queued = 16
	errs := make(chan error, queued+1)
	go func() { errs <- s.Incr(context.Background(), one("first")) }()
	waitFor(t, "a pipeline in flight", func() bool { return s.Stats().InFlight == 1 })
	for i := range queued {
		go func() { errs <- s.Incr(context.Background(), one("q"+strconv.Itoa(i))) }()
	}
	waitFor(t, "16 requests queued", func() bool { return s.queued() == queued })
	srv.Kill()
	for i := range queued + 1 {
		if err := <-errs; err == nil || errors.Is(err, ErrStoreClosed) || errors.Is(err, context.Canceled) {
			t.Errorf("request %d with Redis down: got %v, want Redis' error", i, err)
		}
	}
	if st := s.Stats(); st.Pipelines != 3 || st.Requests != 2+queued {
		t.Errorf("stats %+v: want the 16 queued requests in one pipeline (3 in all)", st)
	}
}

// BenchmarkRedisStoreIncr: one counter per call from 32 goroutines, with
// one pipeline per call (0) and with 1, 2 or 4 shared pipelines in flight.
func BenchmarkRedisStoreIncr(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client()
	for _, n := range []int{0, 1, 2, 4} {
		b.Run("pipelines="+strconv.Itoa(n), func(b *testing.B) {
			s := NewRedisStore(rdb, WithPipelines(n))
			defer s.Close()
			b.SetParallelism(16)
			b.ReportAllocs()
			var w atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				key := "b" + strconv.FormatInt(w.Add(1), 10)
				for pb.Next() {
					if err := s.Incr(context.Background(), one(key)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			st := s.Stats()
			b.ReportMetric(float64(st.Requests)/float64(max(st.Pipelines, 1)), "req/pipeline")
		})
	}
}
