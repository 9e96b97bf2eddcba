package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/flowgate/flowgate/admin"
	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/cluster/envoyrls"
	"github.com/flowgate/flowgate/flow"
)

// envoyConfig is serve's Envoy rate-limit service: off unless Listen and
// Config are both set.
type envoyConfig struct {
	Listen    string `json:"listen"`    // gRPC address of envoy.service.ratelimit.v3; "" = off
	Config    string `json:"config"`    // envoyproxy/ratelimit YAML: a file or a directory, hot reloaded
	Store     string `json:"store"`     // "redis" (default: the -redis server(s)) or "local" (this process only)
	Headers   bool   `json:"headers"`   // add RateLimit-Limit/-Remaining/-Reset to answers
	KeyPrefix string `json:"keyPrefix"` // Redis counter key prefix; default "" as envoyproxy/ratelimit
	HashTag   bool   `json:"hashTag"`   // the domain in a hash tag: one slot, one round trip per request on a cluster
	// Pipelines is how many Redis pipelines of counters may be in flight
	// at once; the requests arriving meanwhile share the next. Default 2;
	// 0 = one pipeline per request, sent at once (envoyproxy/ratelimit's way).
	Pipelines int `json:"pipelines"`
	MaxBatch  int `json:"maxBatch"` // commands in one shared pipeline at most (two per counter); default 1024
}

// bindEnvoyFlags defines the -envoy-* flags on fs over ec.
func bindEnvoyFlags(fs *flag.FlagSet, ec *envoyConfig) {
	fs.StringVar(&ec.Listen, "envoy-listen", ec.Listen, "gRPC address answering Envoy's rate-limit service (envoy.service.ratelimit.v3); empty: off")
	fs.StringVar(&ec.Config, "envoy-config", ec.Config, "envoyproxy/ratelimit YAML configuration: a file or a directory of them, hot reloaded")
	fs.StringVar(&ec.Store, "envoy-store", ec.Store, `where Envoy's fixed-window counters live: "redis" (the -redis servers) or "local" (this process only)`)
	fs.BoolVar(&ec.Headers, "envoy-headers", ec.Headers, "answer Envoy with RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset headers")
	fs.StringVar(&ec.KeyPrefix, "envoy-key-prefix", ec.KeyPrefix, "prefix of Envoy counters' Redis keys (envoyproxy/ratelimit's CACHE_KEY_PREFIX)")
	fs.IntVar(&ec.Pipelines, "envoy-redis-pipelines", ec.Pipelines,
		"Redis pipelines of Envoy counters in flight at once, the requests arriving meanwhile sharing the next (0: one pipeline per request)")
	fs.IntVar(&ec.MaxBatch, "envoy-redis-max-batch", ec.MaxBatch, "commands in one shared Redis pipeline of Envoy counters at most (two per counter)")
	fs.BoolVar(&ec.HashTag, "envoy-hash-tag", ec.HashTag, "put the domain of Envoy counters' keys in a hash tag: a request's counters in one Redis Cluster slot, one round trip (the domain's load on one node)")
}

func (ec *envoyConfig) validate() error {
	switch {
	case (ec.Listen == "") != (ec.Config == ""):
		return errors.New("envoy: -envoy-listen and -envoy-config go together")
	case ec.Store != "" && ec.Store != "redis" && ec.Store != "local":
		return fmt.Errorf("envoy: store %q: want redis or local", ec.Store)
	case ec.Pipelines < 0:
		return fmt.Errorf("envoy: pipelines %d: want 0 (one per request) or more", ec.Pipelines)
	case ec.MaxBatch < 2:
		return fmt.Errorf("envoy: maxBatch %d: want 2 (one counter) or more", ec.MaxBatch)
	}
	return nil
}

// envoyService is the running Envoy service; stop drains it.
type envoyService struct {
	svc    *envoyrls.Service
	srv    *envoyrls.Server
	w      *envoyrls.Watcher
	leases *envoyLeases
	served chan error
}

// envoyLeases builds the leasing token servers of the leased descriptors
// (one per distinct lease setting, as the configuration asks) and closes
// them at stop, with the counters' store (its sender goroutines). They share the main server's Redis, prefix and timeout,
// and count as the main server's instance: they send no heartbeat of
// their own (their first one lasts a millisecond) and report its count.
type envoyLeases struct {
	cf    serveConfig
	rdb   redis.UniversalClient
	main  *cluster.RedisTokenServer
	log   *slog.Logger
	store *envoyrls.RedisStore
	mu    sync.Mutex
	all   []*cluster.RedisTokenServer
}

// leasedServer is a leasing token server counting instances as main does.
type leasedServer struct {
	*cluster.RedisTokenServer
	main *cluster.RedisTokenServer
}

func (l leasedServer) Instances() int { return l.main.Instances() }

func (el *envoyLeases) newServer(ls envoyrls.Lease) (flow.TokenServer, error) {
	el.mu.Lock()
	defer el.mu.Unlock()
	id := fmt.Sprintf("%s-lease%d", el.main.ID(), len(el.all)+1)
	ts, err := cluster.NewRedisTokenServer(el.rdb, cluster.WithTimeout(time.Duration(el.cf.Timeout)), cluster.WithPrefix(el.cf.Prefix),
		cluster.WithLogger(el.log), cluster.WithInstanceID(id), cluster.WithHeartbeat(0, time.Millisecond),
		cluster.WithLeasing(cluster.LeaseConfig{Period: ls.Period, MaxBatch: ls.MaxBatch}))
	if err != nil {
		return nil, err
	}
	el.all = append(el.all, ts)
	return leasedServer{ts, el.main}, nil
}

// close returns every lease's unspent permits and stops the servers and
// the store.
func (el *envoyLeases) close() error {
	if el == nil {
		return nil
	}
	el.mu.Lock()
	defer el.mu.Unlock()
	errs := []error{el.store.Close()}
	for _, ts := range el.all {
		errs = append(errs, ts.Close())
	}
	return errors.Join(errs...)
}

// startEnvoy starts the Envoy rate-limit service when cf asks for it (nil
// otherwise): the configuration watched, counters in rdb or local, the
// algorithm descriptors decided by ts, guarded as the token service is.
func startEnvoy(cf serveConfig, rdb redis.UniversalClient, ts *cluster.RedisTokenServer, stdout io.Writer, log *slog.Logger) (*envoyService, error) {
	ec := cf.Envoy
	if err := ec.validate(); err != nil || ec.Listen == "" {
		return nil, err
	}
	token, err := readSecret(cf.TokenFile, cf.TokenEnv)
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	exposed := cf
	exposed.Listen = ec.Listen
	if warning, err := exposed.exposure(token != ""); err != nil {
		return nil, fmt.Errorf("envoy: %w", err)
	} else if warning != "" {
		log.Warn("flowgate serve: envoy: " + warning)
	}
	opts, leases := envoyOptions(cf, rdb, ts, log)
	svc := envoyrls.NewService(opts...)
	w, err := envoyrls.Watch(svc, ec.Config, envoyrls.WatchLogger(log))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("envoy: %w", err), leases.close())
	}
	var gopts []grpc.ServerOption
	if cf.TLS.Cert != "" {
		tc, err := serverTLS(cf.TLS)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("tls: %w", err), w.Close(), leases.close())
		}
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(tc)))
	}
	lis, err := net.Listen("tcp", ec.Listen)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("envoy: %w", err), w.Close(), leases.close())
	}
	es := &envoyService{svc: svc, srv: envoyrls.NewServer(svc, token, gopts...), w: w, leases: leases, served: make(chan error, 1)}
	go func() { es.served <- es.srv.Serve(lis) }()
	fmt.Fprintf(stdout, "envoy rate limit service on %s\n", lis.Addr())
	return es, nil
}

// envoyOptions are the Envoy service's options from serve's settings,
// with the leasing token servers' builder (nil with the local store).
func envoyOptions(cf serveConfig, rdb redis.UniversalClient, ts *cluster.RedisTokenServer, log *slog.Logger) ([]envoyrls.Option, *envoyLeases) {
	ec := cf.Envoy
	opts := []envoyrls.Option{envoyrls.WithLogger(log), envoyrls.WithKeyPrefix(ec.KeyPrefix)}
	if ec.Headers {
		opts = append(opts, envoyrls.WithResponseHeaders(envoyrls.HeaderNames{}))
	}
	if ec.HashTag {
		opts = append(opts, envoyrls.WithDomainHashTag())
	}
	if ec.Store == "local" {
		log.Info("flowgate serve: envoy: decisions local to this process (no Redis): each replica counts alone")
		return opts, nil
	}
	store := envoyrls.NewRedisStore(rdb, envoyrls.WithPipelines(ec.Pipelines), envoyrls.WithMaxBatch(ec.MaxBatch))
	leases := &envoyLeases{cf: cf, rdb: rdb, main: ts, log: log, store: store}
	return append(opts, envoyrls.WithStore(store), envoyrls.WithTokenServer(ts), envoyrls.WithLeasing(leases.newServer)), leases
}

// stop drains the calls in flight for up to timeout, then stops watching
// and returns the leases' unspent permits. A nil service (Envoy off)
// stops nothing.
func (es *envoyService) stop(timeout time.Duration) error {
	if es == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := es.srv.Shutdown(ctx)
	return errors.Join(err, <-es.served, es.w.Close(), es.leases.close())
}

// envoyCollector exports the Envoy service's counts: per configured limit
// (its place in the configuration, so the label values are bounded by the
// configuration's size), the hits within, over, and over in shadow mode.
type envoyCollector struct{ svc *envoyrls.Service }

var (
	envoyRequestsDesc = prometheus.NewDesc("flowgate_envoy_requests_total", "ShouldRateLimit calls answered.", nil, nil)
	envoyErrorsDesc   = prometheus.NewDesc("flowgate_envoy_errors_total", "ShouldRateLimit calls failed (counters unreachable).", nil, nil)
	envoyHitsDesc     = prometheus.NewDesc("flowgate_envoy_hits_total", "Hits per configured limit and outcome (within, over, shadow: over but answered OK).",
		[]string{"domain", "limit", "outcome"}, nil)
	envoyValueHitsDesc = prometheus.NewDesc("flowgate_envoy_value_hits_total",
		"Hits per request value of the limits with detailed_metric or value_to_metric, and outcome; at most 100 values per limit, the rest under value=\"other\".",
		[]string{"domain", "limit", "value", "outcome"}, nil)
)

// envoyStoreCollector exports what the Redis counter store sent: its
// round trips and how many requests shared each, and what waits now.
type envoyStoreCollector struct{ store *envoyrls.RedisStore }

var (
	envoyPipelinesDesc = prometheus.NewDesc("flowgate_envoy_redis_pipelines_total",
		"Pipelines (round trips; per node on a cluster) the Envoy service's counter store sent to Redis.", nil, nil)
	envoyStoreRequestsDesc = prometheus.NewDesc("flowgate_envoy_redis_requests_total",
		"ShouldRateLimit calls whose counters went to Redis; divided by the pipelines, the calls sharing a round trip.", nil, nil)
	envoyCommandsDesc = prometheus.NewDesc("flowgate_envoy_redis_commands_total", "INCRBY and EXPIRE commands sent to Redis.", nil, nil)
	envoyInFlightDesc = prometheus.NewDesc("flowgate_envoy_redis_in_flight", "Calls whose counters are in a pipeline now.", nil, nil)
	envoyQueuedDesc   = prometheus.NewDesc("flowgate_envoy_redis_queued", "Calls whose counters wait for a free sender now.", nil, nil)
)

func (c envoyStoreCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{envoyPipelinesDesc, envoyStoreRequestsDesc, envoyCommandsDesc, envoyInFlightDesc, envoyQueuedDesc} {
		ch <- d
	}
}

func (c envoyStoreCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.store.Stats()
	ch <- prometheus.MustNewConstMetric(envoyPipelinesDesc, prometheus.CounterValue, float64(st.Pipelines))
	ch <- prometheus.MustNewConstMetric(envoyStoreRequestsDesc, prometheus.CounterValue, float64(st.Requests))
	ch <- prometheus.MustNewConstMetric(envoyCommandsDesc, prometheus.CounterValue, float64(st.Commands))
	ch <- prometheus.MustNewConstMetric(envoyInFlightDesc, prometheus.GaugeValue, float64(st.InFlight))
	ch <- prometheus.MustNewConstMetric(envoyQueuedDesc, prometheus.GaugeValue, float64(st.Queued))
}

func (c envoyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- envoyRequestsDesc
	ch <- envoyErrorsDesc
	ch <- envoyHitsDesc
	ch <- envoyValueHitsDesc
}

func (c envoyCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.svc.Stats()
	ch <- prometheus.MustNewConstMetric(envoyRequestsDesc, prometheus.CounterValue, float64(st.Requests))
	ch <- prometheus.MustNewConstMetric(envoyErrorsDesc, prometheus.CounterValue, float64(st.Errors))
	for path, ls := range st.Limits {
		domain, _, _ := strings.Cut(path, ".")
		ch <- prometheus.MustNewConstMetric(envoyHitsDesc, prometheus.CounterValue, float64(ls.Within), domain, path, "within")
		ch <- prometheus.MustNewConstMetric(envoyHitsDesc, prometheus.CounterValue, float64(ls.Over), domain, path, "over")
		ch <- prometheus.MustNewConstMetric(envoyHitsDesc, prometheus.CounterValue, float64(ls.Shadow), domain, path, "shadow")
	}
	for path, vals := range st.Values {
		domain, _, _ := strings.Cut(path, ".")
		for v, ls := range vals {
			ch <- prometheus.MustNewConstMetric(envoyValueHitsDesc, prometheus.CounterValue, float64(ls.Within), domain, path, v, "within")
			ch <- prometheus.MustNewConstMetric(envoyValueHitsDesc, prometheus.CounterValue, float64(ls.Over), domain, path, v, "over")
			ch <- prometheus.MustNewConstMetric(envoyValueHitsDesc, prometheus.CounterValue, float64(ls.Shadow), domain, path, v, "shadow")
		}
	}
}

// adminDomains feeds the admin console's Envoy view (nil when off).
func (es *envoyService) adminDomains() func() []admin.EnvoyDomain {
	if es == nil {
		return nil
	}
	return func() []admin.EnvoyDomain {
		var out []admin.EnvoyDomain
		for _, d := range es.svc.Domains() {
			ad := admin.EnvoyDomain{Domain: d.Domain, Limits: []admin.EnvoyLimit{}}
			for _, l := range d.Limits {
				ad.Limits = append(ad.Limits, admin.EnvoyLimit{Path: l.Path, RequestsPerUnit: l.RequestsPerUnit, Unit: l.Unit,
					Algorithm: l.Algorithm, Unlimited: l.Unlimited, Shadow: l.Shadow, Leased: l.Leased, Settled: l.Settled,
					Within: l.Counts.Within, Over: l.Counts.Over, ShadowHits: l.Counts.Shadow})
			}
			out = append(out, ad)
		}
		return out
	}
}

// collectors are what the Envoy service adds to /metrics (none when off).
func (es *envoyService) collectors() []prometheus.Collector {
	if es == nil {
		return nil
	}
	cs := []prometheus.Collector{envoyCollector{es.svc}}
	if es.leases != nil { // counters in Redis
		cs = append(cs, envoyStoreCollector{es.leases.store})
	}
	return cs
}
