package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/accuracy"
	"github.com/flowgate/flowgate/internal/redistest"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// The distributed-accuracy table (make bench-accuracy; see
// scripts/bench-accuracy.sh): N instances, each with its own go-redis
// client (library defaults), token server and engine, share one global
// cluster rule on one redis-server; a paced load is offered and every
// outcome's time recorded (internal/accuracy). The grid comes from the
// environment so a run can be cut down:
//
//	ACC_NS=1,2,4,8,16,32  ACC_LOADS=0.5,0.8,1,2,10  ACC_SHAPES=even,skewed,moving
//	ACC_ALGOS=token_bucket,sliding_window,fixed_window
//	ACC_SETTINGS=off,defaults,p50-b16,p200-b256,redis_rate,split
//	ACC_CELL=4s  ACC_PROCS=4 (the N run once more as separate processes; 0: none)
const accLimit = 1000 // per second, window 1s

type accSetting struct {
	name  string
	lease *cluster.LeaseConfig // nil: every call goes to Redis
}

var accSettings = map[string]accSetting{
	"off":       {"off", nil},
	"defaults":  {"defaults", &cluster.LeaseConfig{}},
	"p50-b16":   {"p50-b16", &cluster.LeaseConfig{Period: 50 * time.Millisecond, MaxBatch: 16}},
	"p200-b256": {"p200-b256", &cluster.LeaseConfig{Period: 200 * time.Millisecond, MaxBatch: 256}},
}

// accRow is one cell of the table.
type accRow struct {
	Algo, Setting, Shape string
	N                    int
	Procs                bool // instances were separate OS processes
	Load                 float64
	accuracy.Cell
	TripsPer1000 float64
	Dropped      int64
}

func accEnv(name, def string) []string {
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	return strings.Split(v, ",")
}

func TestAccuracyTable(t *testing.T) {
	if os.Getenv("FLOWGATE_ACCURACY") == "" {
		t.Skip("the accuracy table runs with make bench-accuracy (FLOWGATE_ACCURACY=1)")
	}
	cell, err := time.ParseDuration(accEnv("ACC_CELL", "4s")[0])
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	admin := srv.Client()
	var rows []accRow
	procs, _ := strconv.Atoi(accEnv("ACC_PROCS", "4")[0])
	for _, algo := range accEnv("ACC_ALGOS", "token_bucket,sliding_window,fixed_window") {
		for _, setting := range accEnv("ACC_SETTINGS", "off,defaults,p50-b16,p200-b256,redis_rate,split") {
			if setting == "redis_rate" && algo != "token_bucket" {
				continue // GCRA is one algorithm: it stands beside token_bucket
			}
			for _, ns := range accEnv("ACC_NS", "1,2,4,8,16,32") {
				n, _ := strconv.Atoi(ns)
				for _, shape := range accEnv("ACC_SHAPES", "even,skewed,moving") {
					for _, ls := range accEnv("ACC_LOADS", "0.5,0.8,1,2,10") {
						load, _ := strconv.ParseFloat(ls, 64)
						r := accCell(t, srv, admin, algo, setting, n, shape, load, cell, false)
						rows = append(rows, r)
						if n == procs && shape == "skewed" && load == 2 && setting == "defaults" {
							rows = append(rows, accCell(t, srv, admin, algo, setting, n, shape, load, cell, true))
						}
					}
				}
			}
		}
	}
	if err := accWrite(rows); err != nil {
		t.Fatal(err)
	}
}

func accShape(s string) accuracy.Shape {
	switch s {
	case "skewed":
		return accuracy.Skewed
	case "moving":
		return accuracy.Moving
	}
	return accuracy.Even
}

// accCell runs one cell, in this process or (procs) as n child processes.
func accCell(t *testing.T, srv *redistest.Server, admin *redis.Client, algo, setting string, n int, shape string, load float64, d time.Duration, procs bool) accRow {
	ctx := context.Background()
	if err := admin.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	l := accuracy.Load{Rate: load * accLimit, Duration: d, Shape: accShape(shape)}
	var tr accuracy.Trace
	if procs {
		tr = accChildren(t, srv, algo, setting, n, l)
	} else {
		inst, closeAll := accInstances(t, srv, algo, setting, n, 0, n)
		tr = accuracy.Run(l, inst)
		closeAll()
	}
	m := accuracy.Measure(tr, time.Second, time.Second, accLimit, min(load, 1)*accLimit)
	trips := accEvalCalls(ctx, admin)
	r := accRow{Algo: algo, Setting: setting, Shape: shape, N: n, Procs: procs, Load: load, Cell: m, Dropped: tr.Dropped}
	if m.Decisions > 0 {
		r.TripsPer1000 = 1000 * float64(trips) / float64(m.Decisions)
	}
	t.Logf("%s %s N=%d procs=%v %s %.1fx: worst %.1f%% best %.1f%% refused-under %d trips/1000 %.0f decisions/s %.0f dropped %d windows %d skipped %d",
		algo, setting, n, procs, shape, load, m.WorstPct, m.BestPct, m.RefusedUnder, r.TripsPer1000, m.DecisionsPerS, tr.Dropped, m.Windows, m.Skipped)
	return r
}

// accEvalCalls is the scripts Redis ran since the last CONFIG RESETSTAT:
// every decision, lease, return and heartbeat is one.
func accEvalCalls(ctx context.Context, rdb *redis.Client) int64 {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_eval") {
			continue
		}
		_, rest, _ := strings.Cut(line, "calls=")
		v, _, _ := strings.Cut(rest, ",")
		c, _ := strconv.ParseInt(v, 10, 64)
		total += c
	}
	return total
}

func accAlgo(s string) flow.Algorithm {
	switch s {
	case "sliding_window":
		return flow.AlgoSlidingWindow
	case "fixed_window":
		return flow.AlgoFixedWindow
	case "sliding_log":
		return flow.AlgoSlidingLog
	}
	return flow.AlgoTokenBucket
}

// accInstances builds instances first..first+count of n: each with its own
// client with the library's defaults (as the README sets one up), token
// server and engine; "split" instances are local engines limited to
// limit/n, "redis_rate" ones call redis_rate's Allow.
func accInstances(t testing.TB, srv *redistest.Server, algo, setting string, n, first, count int) ([]accuracy.Decide, func()) {
	var inst []accuracy.Decide
	var closers []func()
	for range count {
		rdb := srv.NewClient(srv.ClientOptions())
		closers = append(closers, func() { rdb.Close() })
		switch setting {
		case "redis_rate":
			lim := redis_rate.NewLimiter(rdb)
			lm := redis_rate.Limit{Rate: accLimit, Burst: accLimit, Period: time.Second}
			inst = append(inst, func() bool {
				res, err := lim.Allow(context.Background(), "acc", lm)
				return err == nil && res.Allowed > 0
			})
			continue
		case "split":
			eng := flow.NewEngine()
			rule := flow.Rule{ID: "acc", Resource: "acc", Algorithm: accAlgo(algo), Limit: float64(accLimit) / float64(n), Window: time.Second}
			if err := eng.LoadRules([]flow.Rule{rule}); err != nil {
				t.Fatal(err)
			}
			inst = append(inst, accEntry(eng))
			continue
		}
		var opts []cluster.Option
		if lc := accSettings[setting].lease; lc != nil {
			opts = append(opts, cluster.WithLeasing(*lc))
		}
		ts, err := cluster.NewRedisTokenServer(rdb, opts...)
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, func() { ts.Close() })
		eng := flow.NewEngine(flow.WithTokenServer(ts))
		rule := flow.Rule{ID: "acc", Resource: "acc", Algorithm: accAlgo(algo), Limit: accLimit, Window: time.Second,
			Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "deny"}}
		if err := eng.LoadRules([]flow.Rule{rule}); err != nil {
			t.Fatal(err)
		}
		inst = append(inst, accEntry(eng))
	}
	return inst, func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
}

func accEntry(eng *flow.Engine) accuracy.Decide {
	return func() bool {
		p, err := eng.Entry("acc")
		if err != nil {
			var be *flow.BlockError
			_ = errors.As(err, &be)
			return false
		}
		p.Exit()
		return true
	}
}

// accChildren runs the cell with each instance in its own OS process (this
// test binary again, TestAccuracyChild), all starting at one instant, and
// merges their traces.
func accChildren(t *testing.T, srv *redistest.Server, algo, setting string, n int, l accuracy.Load) accuracy.Trace {
	start := time.Now().Add(2 * time.Second) // time for every child to connect
	cmds := make([]*exec.Cmd, n)
	outs := make([]strings.Builder, n)
	for i := range n {
		c := exec.Command(os.Args[0], "-test.run=^TestAccuracyChild$")
		c.Env = append(os.Environ(), "ACC_CHILD="+strings.Join([]string{
			srv.Addr, algo, setting, strconv.Itoa(n), strconv.Itoa(i), strconv.FormatFloat(l.Rate, 'f', -1, 64),
			l.Duration.String(), strconv.Itoa(int(l.Shape)), strconv.FormatInt(start.UnixNano(), 10)}, ","))
		c.Stdout, c.Stderr = &outs[i], os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = c
	}
	var all accuracy.Trace
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i].String())
		}
		out := outs[i].String()
		j := strings.Index(out, "{")
		var tr accuracy.Trace
		if j < 0 || json.NewDecoder(strings.NewReader(out[j:])).Decode(&tr) != nil {
			t.Fatalf("child %d: no trace in %q", i, out)
		}
		all.Admitted = append(all.Admitted, tr.Admitted...)
		all.Refused = append(all.Refused, tr.Refused...)
		all.Stalls = append(all.Stalls, tr.Stalls...)
		all.Dropped += tr.Dropped
		all.Elapsed = max(all.Elapsed, tr.Elapsed)
	}
	all.Rate = l.Rate
	return all
}

// TestAccuracyChild is one instance of a separate-process cell.
func TestAccuracyChild(t *testing.T) {
	env := os.Getenv("ACC_CHILD")
	if env == "" {
		t.Skip("a child of TestAccuracyTable")
	}
	f := strings.Split(env, ",")
	n, _ := strconv.Atoi(f[3])
	i, _ := strconv.Atoi(f[4])
	rate, _ := strconv.ParseFloat(f[5], 64)
	d, _ := time.ParseDuration(f[6])
	shape, _ := strconv.Atoi(f[7])
	ns, _ := strconv.ParseInt(f[8], 10, 64)
	srv := &redistest.Server{Addr: f[0]}
	inst, closeAll := accInstances(t, srv, f[1], f[2], n, i, 1)
	tr := accuracy.Run(accuracy.Load{Rate: rate, Duration: d, Shape: accuracy.Shape(shape), Start: time.Unix(0, ns), First: i, Of: n}, inst)
	closeAll()
	if err := json.NewEncoder(os.Stdout).Encode(tr); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(os.Stderr)
}
