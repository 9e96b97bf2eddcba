package bench

import (
	"strconv"
	"testing"

	sentinel "github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/flowgate/flowgate/flow"
	xrate "golang.org/x/time/rate"
)

// Hotspot parameters, for context: Entry + Exit on a resource limited per
// value of one parameter over 10 000 values, 100 of them with their own
// limit, never reached; beside x/time/rate's Allow in the same run.
//
//	cd bench && go test -run '^$' -bench 'PeersHotspot' -benchmem -count 3
//
// sentinel-golang's op is api.Entry(WithArgs(value)) + Exit with one
// hotspot rule (QPS, Reject, SpecificItems for the 100 values,
// ParamsMaxCapacity 20 000); flowgate's is a param rule with items and
// WithParam. Sentinel is initialised once per process (see initSentinel).

const hotspotValues = 10000

func hotspotTenants() ([]string, map[string]float64) {
	tenants := make([]string, hotspotValues)
	items := map[string]float64{}
	for i := range tenants {
		tenants[i] = "tenant-" + strconv.Itoa(i)
		if i%100 == 0 {
			items[tenants[i]] = 2 * passRate
		}
	}
	return tenants, items
}

func BenchmarkPeersHotspot(b *testing.B) {
	tenants, items := hotspotTenants()
	b.Run("flowgate", func(b *testing.B) {
		e := peerEngine(b, nil, flow.Rule{ID: "per-tenant", Resource: "hot", Level: flow.LevelParam, Param: "tenant",
			Algorithm: flow.AlgoTokenBucket, Limit: passRate, MaxKeys: 2 * hotspotValues, Items: items})
		for _, t := range tenants { // every value tracked: steady state
			p, _ := e.Entry("hot", flow.WithParam("tenant", t))
			p.Exit()
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			p, err := e.Entry("hot", flow.WithParam("tenant", tenants[i]))
			if err != nil {
				b.Fatal(err)
			}
			p.Exit()
			if i++; i == len(tenants) {
				i = 0
			}
		}
	})
	b.Run("sentinel", func(b *testing.B) {
		initSentinel(b)
		specific := make(map[interface{}]int64, len(items))
		for k, v := range items {
			specific[k] = int64(v)
		}
		if _, err := hotspot.LoadRules([]*hotspot.Rule{{Resource: "hot", MetricType: hotspot.QPS, ControlBehavior: hotspot.Reject,
			ParamIndex: 0, Threshold: passRate, DurationInSec: 1, ParamsMaxCapacity: 2 * hotspotValues, SpecificItems: specific}}); err != nil {
			b.Fatal(err)
		}
		for _, t := range tenants {
			if en, blk := sentinel.Entry("hot", sentinel.WithArgs(t)); blk == nil {
				en.Exit()
			}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			en, blk := sentinel.Entry("hot", sentinel.WithArgs(tenants[i]))
			if blk != nil {
				b.Fatal(blk)
			}
			en.Exit()
			if i++; i == len(tenants) {
				i = 0
			}
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
