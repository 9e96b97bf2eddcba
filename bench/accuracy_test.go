package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/accuracy"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// The distributed-accuracy table (make bench-accuracy; see
// scripts/bench-accuracy.sh): N instances, each with its own go-redis
// client (library defaults), token server and engine, share one global
// cluster rule on one redis-server; a paced load is offered and every
// outcome's time recorded (internal/testing/accuracy). The grid is accGrid; the
// environment cuts it down (each a comma-separated subset):
//
//	ACC_NS=1,2,4,8,16,32  ACC_LOADS=0.5,0.8,1,2,10  ACC_SHAPES=even,skewed,moving
//	ACC_ALGOS=token_bucket,sliding_window,fixed_window
//	ACC_SETTINGS=off,defaults,p50-b16,p200-b256,redis_rate,split
//	ACC_CELL=3s  ACC_PROCS=4 (the N run once more as separate processes; 0: none)
const (
	accLimit = 1000 // per second, window 1s
	// accBurst is token_bucket's (and redis_rate's) burst: 2% of the
	// limit, so the 98–102% band plus the burst stays a strict test.
	accBurst = 20
)

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

// accRow is one cell of the table. Cell is measured in the algorithm's
// own windows (accWindows); SlidingWorstPct and SlidingBestPct in every
// 1 s window sliding in 10 ms steps, what a downstream service sees.
type accRow struct {
	Algo, Setting, Shape string
	N                    int
	Procs                bool // instances were separate OS processes
	Load                 float64
	accuracy.Cell
	SlidingWorstPct, SlidingBestPct float64
	TripsPer1000                    float64
	Dropped                         int64
}

// accBlock is a part of the grid: every combination of its lists.
type accBlock struct {
	algos, settings, shapes []string
	ns                      []int
	loads                   []float64
}

// accGrid is the full run, sized to take about 32 minutes with 3 s cells
// (625 cells): leasing off and at its defaults everywhere; the two other
// settings at 1, 4 and 32 instances with a hot instance; redis_rate (one
// algorithm, GCRA, beside token_bucket) and the local split at every N,
// spread evenly and skewed, at 0.8x and above. With one instance every
// shape is the same load, so N = 1 runs "even" only.
var accGrid = []accBlock{
	{algos: []string{"token_bucket", "sliding_window", "fixed_window"}, settings: []string{"off", "defaults"},
		shapes: []string{"even", "skewed", "moving"}, ns: []int{1, 2, 4, 8, 16, 32}, loads: []float64{0.5, 0.8, 1, 2, 10}},
	{algos: []string{"token_bucket", "sliding_window", "fixed_window"}, settings: []string{"p50-b16", "p200-b256"},
		shapes: []string{"skewed"}, ns: []int{1, 4, 32}, loads: []float64{0.8, 1, 10}},
	{algos: []string{"token_bucket"}, settings: []string{"redis_rate", "split"},
		shapes: []string{"even", "skewed"}, ns: []int{1, 2, 4, 8, 16, 32}, loads: []float64{0.8, 1, 2, 10}},
}

// accCellSpec is one cell to run.
type accCellSpec struct {
	algo, setting, shape string
	n                    int
	load                 float64
}

// accCells is the grid cut down to the subsets the environment names.
func accCells() []accCellSpec {
	pick := func(name string) func(string) bool {
		v := os.Getenv(name)
		return func(x string) bool { return v == "" || slices.Contains(strings.Split(v, ","), x) }
	}
	algo, setting, shape, ns, load := pick("ACC_ALGOS"), pick("ACC_SETTINGS"), pick("ACC_SHAPES"), pick("ACC_NS"), pick("ACC_LOADS")
	var out []accCellSpec
	for _, b := range accGrid {
		for _, a := range b.algos {
			for _, st := range b.settings {
				for _, n := range b.ns {
					for _, sh := range b.shapes {
						if n == 1 && sh != "even" && slices.Contains(b.shapes, "even") {
							continue
						}
						for _, l := range b.loads {
							if algo(a) && setting(st) && shape(sh) && ns(strconv.Itoa(n)) && load(strconv.FormatFloat(l, 'f', -1, 64)) {
								out = append(out, accCellSpec{a, st, sh, n, l})
							}
						}
					}
				}
			}
		}
	}
	return out
}

func accEnv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func TestAccuracyTable(t *testing.T) {
	if os.Getenv("FLOWGATE_ACCURACY") == "" {
		t.Skip("the accuracy table runs with make bench-accuracy (FLOWGATE_ACCURACY=1)")
	}
	cell, err := time.ParseDuration(accEnv("ACC_CELL", "3s"))
	if err != nil {
		t.Fatal(err)
	}
	procs, _ := strconv.Atoi(accEnv("ACC_PROCS", "4"))
	cells := accCells()
	if len(cells) == 0 {
		t.Fatal("ACC_* select no cell of the grid")
	}
	t.Logf("%d cells of %v: about %v", len(cells), cell, time.Duration(len(cells))*(cell+100*time.Millisecond))
	srv := redistest.Start(t)
	admin := srv.Client()
	loadBefore := accLoadAvg()
	var rows []accRow
	for _, c := range cells {
		rows = append(rows, accCell(t, srv, admin, c, cell, false))
		if c.n == procs && c.shape == "skewed" && c.load == 2 && c.setting == "defaults" {
			rows = append(rows, accCell(t, srv, admin, c, cell, true))
		}
	}
	if err := accWrite(newAccRun(loadBefore, len(rows)), rows); err != nil {
		t.Fatal(err)
	}
}

// accWindows is the algorithm's own windows (see accuracy.Windows): a
// fixed_window's epoch seconds, a sliding_window's sub-window grid (10
// buckets by default), any 10 ms phase for a token bucket; all but the
// fixed windows after the first second, while a fresh limiter settles.
func accWindows(algo string) accuracy.Windows {
	switch algo {
	case "fixed_window":
		return accuracy.Windows{Length: time.Second, Step: time.Second}
	case "sliding_window":
		return accuracy.Windows{Length: time.Second, Step: 100 * time.Millisecond, Skip: time.Second}
	}
	return accuracy.Windows{Length: time.Second, Skip: time.Second}
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
func accCell(t *testing.T, srv *redistest.Server, admin *redis.Client, c accCellSpec, d time.Duration, procs bool) accRow {
	ctx := context.Background()
	if err := admin.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	l := accuracy.Load{Rate: c.load * accLimit, Duration: d, Shape: accShape(c.shape)}
	var tr accuracy.Trace
	if procs {
		tr = accChildren(t, srv, c.algo, c.setting, c.n, l)
	} else {
		inst, closeAll := accInstances(t, srv, c.algo, c.setting, c.n, 0, c.n)
		tr = accuracy.Run(l, inst)
		closeAll()
	}
	ref := min(c.load, 1) * accLimit
	m := accuracy.Measure(tr, accWindows(c.algo), accLimit, ref)
	sl := accuracy.Measure(tr, accuracy.Windows{Length: time.Second, Skip: time.Second}, accLimit, ref)
	trips := accEvalCalls(ctx, admin)
	r := accRow{Algo: c.algo, Setting: c.setting, Shape: c.shape, N: c.n, Procs: procs, Load: c.load, Cell: m,
		SlidingWorstPct: sl.WorstPct, SlidingBestPct: sl.BestPct, Dropped: tr.Dropped}
	if m.Decisions > 0 {
		r.TripsPer1000 = 1000 * float64(trips) / float64(m.Decisions)
	}
	t.Logf("%s %s N=%d procs=%v %s %.1fx: worst %.1f%% best %.1f%% (sliding %.1f..%.1f%%) refused-under %d trips/1000 %.0f decisions/s %.0f dropped %d windows %d skipped %d",
		c.algo, c.setting, c.n, procs, c.shape, c.load, m.WorstPct, m.BestPct, sl.WorstPct, sl.BestPct, m.RefusedUnder, r.TripsPer1000, m.DecisionsPerS, tr.Dropped, m.Windows, m.Skipped)
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
			lm := redis_rate.Limit{Rate: accLimit, Burst: accBurst, Period: time.Second}
			inst = append(inst, func() bool {
				res, err := lim.Allow(context.Background(), "acc", lm)
				return err == nil && res.Allowed > 0
			})
			continue
		case "split":
			eng := flow.NewEngine()
			rule := flow.Rule{ID: "acc", Resource: "acc", Algorithm: accAlgo(algo), Limit: float64(accLimit) / float64(n), Window: time.Second}
			if algo == "token_bucket" {
				rule.Burst = float64(max(1, accBurst/n))
			}
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
		if algo == "token_bucket" {
			rule.Burst = accBurst
		}
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
	all.Start = start.UnixNano()
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
