package bench

import (
	"sync"
	"testing"
	"time"

	sentinel "github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/config"
	"github.com/alibaba/sentinel-golang/logging"
	"github.com/flowgate/flowgate/flow"
	xrate "golang.org/x/time/rate"
)

// Circuit breakers, for context: Entry + Exit through a closed breaker
// (error ratio 0.5 over 10s, never reached), beside x/time/rate's Allow in
// the same run.
//
//	cd bench && go test -run '^$' -bench 'PeersBreaker' -benchmem -count 3
//
// sentinel-golang's op is api.Entry + SentinelEntry.Exit on a resource
// with one circuit-breaker rule and nothing else. Sentinel keeps its
// engine in package globals and starts background goroutines (metric
// log, statistics) at Init, which no Close stops: it is initialised once
// for the process, logging to a temporary directory.

var sentinelOnce sync.Once

func initSentinel(b *testing.B) {
	sentinelOnce.Do(func() {
		conf := config.NewDefaultConfig()
		conf.Sentinel.Log.Dir = b.TempDir()
		conf.Sentinel.Log.Logger = logging.NewConsoleLogger()
		logging.ResetGlobalLoggerLevel(logging.ErrorLevel)
		if err := sentinel.InitWithConfig(conf); err != nil {
			b.Fatal(err)
		}
	})
	if _, err := circuitbreaker.LoadRules([]*circuitbreaker.Rule{{Resource: "r", Strategy: circuitbreaker.ErrorRatio,
		RetryTimeoutMs: 5000, MinRequestAmount: 5, StatIntervalMs: 10000, StatSlidingWindowBucketCount: 10,
		Threshold: 0.5, ProbeNum: 1}}); err != nil {
		b.Fatal(err)
	}
}

var benchBreaker = flow.Rule{ID: "cb", Resource: "r", Algorithm: flow.AlgoCircuitBreaker, Strategy: flow.BreakerErrorRatio,
	Threshold: 0.5, Window: 10 * time.Second, OpenFor: 5 * time.Second, Probes: 1}

func BenchmarkPeersBreaker(b *testing.B) {
	entryExit := func(rules ...flow.Rule) func(*testing.B) {
		return func(b *testing.B) {
			e := peerEngine(b, nil, rules...)
			b.ReportAllocs()
			for b.Loop() {
				p, err := e.Entry("r")
				if err != nil {
					b.Fatal(err)
				}
				p.Exit()
			}
		}
	}
	b.Run("flowgate", entryExit(benchBreaker))
	b.Run("flowgate+token_bucket", entryExit(benchBreaker, passRule))
	b.Run("sentinel", func(b *testing.B) {
		initSentinel(b)
		b.ReportAllocs()
		for b.Loop() {
			en, blk := sentinel.Entry("r")
			if blk != nil {
				b.Fatal(blk)
			}
			en.Exit()
		}
	})
	b.Run("x-time-rate", func(b *testing.B) {
		l := xrate.NewLimiter(xrate.Limit(passRate), passRate)
		b.ReportAllocs()
		for b.Loop() {
			l.Allow()
		}
	})
}
