package metrics

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/flowgate/flowgate/flow"
)

// NewOTelProducer returns an OpenTelemetry SDK producer of the duration
// histograms that asynchronous instruments cannot carry:
// flowgate.request.duration and flowgate.request.time_in_queue per
// resource, and flowgate.cluster.request.duration with WithCluster. Each
// is cumulative, with the engine's fixed bucket bounds, under scope
// ScopeName. Register it on the reader that exports RegisterOTel's
// instruments:
//
//	reader := sdkmetric.NewPeriodicReader(exp, sdkmetric.WithProducer(metrics.NewOTelProducer(eng)))
//
// The start time of the cumulative series is the engine's time at the first
// Produce, the nearest this side can know to when the engine began counting.
// WithHistograms(false) leaves the per-resource histograms out.
func NewOTelProducer(eng *flow.Engine, opts ...Option) sdkmetric.Producer {
	if eng == nil {
		panic("metrics: NewOTelProducer with a nil engine")
	}
	return &otelProducer{eng: eng, cfg: newConfig(opts)}
}

type otelProducer struct {
	eng       *flow.Engine
	cfg       config
	startOnce sync.Once
	start     time.Time
}

// Produce returns the histograms of one engine snapshot.
func (p *otelProducer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	var ms []metricdata.Metrics
	s := p.eng.Snapshot() // its Time is the engine's clock, also for the cluster source
	now := s.Time
	p.startOnce.Do(func() { p.start = now })
	if p.cfg.histograms {
		rt := metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality}
		wait := metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality}
		add := func(r *flow.ResourceStats) {
			attrs := attribute.NewSet(AttrResource.String(r.Resource))
			rt.DataPoints = append(rt.DataPoints, p.point(attrs, now, r.RTHist, r.RTSum))
			wait.DataPoints = append(wait.DataPoints, p.point(attrs, now, r.WaitHist, r.WaitSum))
		}
		for i := range s.Resources {
			add(&s.Resources[i])
		}
		for _, name := range idleResources(&s) {
			add(zeroStats(name, &s))
		}
		ms = append(ms,
			metricdata.Metrics{Name: OTelRequestDuration, Unit: "s",
				Description: "Time from admission to Exit of admitted calls.", Data: rt},
			metricdata.Metrics{Name: OTelTimeInQueue, Unit: "s",
				Description: "Time calls that queued (rules with MaxWait) waited before passing.", Data: wait})
	}
	if p.cfg.cluster != nil {
		m := p.cfg.cluster()
		ms = append(ms, metricdata.Metrics{Name: OTelClusterDuration, Unit: "s",
			Description: "Latency of requests to the cluster token server.",
			Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality,
				DataPoints: []metricdata.HistogramDataPoint[float64]{
					p.point(*attribute.EmptySet(), now, m.Duration, m.DurationSum)}}})
	}
	if len(ms) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{Scope: instrumentation.Scope{Name: ScopeName}, Metrics: ms}}, nil
}

// point converts a flow.Histogram, whose per-bucket counts with an overflow
// bucket are already OTel's layout. An empty histogram (no bounds yet) is
// sent as one overflow bucket so that Count and BucketCounts agree.
func (p *otelProducer) point(attrs attribute.Set, now time.Time, h flow.Histogram, sum time.Duration) metricdata.HistogramDataPoint[float64] {
	counts := make([]uint64, len(h.Bounds)+1)
	var total uint64
	for i := range counts {
		if i < len(h.Counts) {
			counts[i] = h.Counts[i]
		}
		total += counts[i]
	}
	for i := len(counts); i < len(h.Counts); i++ { // more counts than bounds: all overflow
		counts[len(counts)-1] += h.Counts[i]
		total += h.Counts[i]
	}
	return metricdata.HistogramDataPoint[float64]{
		Attributes:   attrs,
		StartTime:    p.start,
		Time:         now,
		Count:        total,
		Bounds:       h.Bounds,
		BucketCounts: counts,
		Sum:          sum.Seconds(),
	}
}
