package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// serveConfig is `flowgate serve`'s configuration: a JSON file (-config)
// whose fields flags of the same meaning override. Secrets never appear
// in it or on the command line (where ps would show them): the auth token
// and the Redis password are read from a file or an environment variable.
type serveConfig struct {
	Listen          string      `json:"listen"`        // gRPC address; default "127.0.0.1:7600"
	MetricsListen   string      `json:"metricsListen"` // /metrics address; "" = off
	Rules           string      `json:"rules"`         // rules document to serve by id, hot reloaded; "" = none
	Redis           redisConfig `json:"redis"`
	TLS             tlsConfig   `json:"tls"`
	TokenFile       string      `json:"tokenFile"`       // shared bearer token, first line of the file
	TokenEnv        string      `json:"tokenEnv"`        // or an environment variable holding it
	MaxQPS          int64       `json:"maxQps"`          // per namespace; default 30000; <= 0 = off
	Timeout         duration    `json:"timeout"`         // per Redis call; default 20ms
	ShutdownTimeout duration    `json:"shutdownTimeout"` // drain limit; default 10s
	Prefix          string      `json:"prefix"`          // Redis key prefix; default "flowgate:"
	InlineRules     *bool       `json:"inlineRules"`     // accept rules sent inline; default true
	// AdminTokenEnv names the environment variable holding the bearer
	// token that turns on the admin API's writes (replace the rules,
	// written back to Rules; reset a key); "" = the admin is read-only.
	AdminTokenEnv string `json:"adminTokenEnv"`
	// AdminReadTokenEnv names the environment variable holding the bearer
	// token the admin API's reads (and the console's calls) then need:
	// top keys and key states name users and client IPs. "" = reads open,
	// which serve allows only on a loopback MetricsListen unless
	// AllowOpenAdminReads.
	AdminReadTokenEnv string `json:"adminReadTokenEnv"`
	// NoAdmin serves /metrics alone on MetricsListen, without the admin
	// API and console: what a Prometheus-only listener beyond loopback
	// wants. Default false.
	NoAdmin bool `json:"noAdmin"`
	// AllowUnauthenticated lets Listen be beyond loopback with neither a
	// token nor client certificates (a warning is logged); default false,
	// and serve refuses to start that way.
	AllowUnauthenticated bool `json:"allowUnauthenticated"`
	// AllowCleartextToken lets Listen be beyond loopback with a token but
	// without TLS, the token crossing the network in clear (a warning is
	// logged); default false, and serve refuses to start that way.
	AllowCleartextToken bool `json:"allowCleartextToken"`
	// AllowOpenAdminReads lets MetricsListen be beyond loopback with the
	// admin reads open, no AdminReadTokenEnv (a warning is logged); default
	// false, and serve refuses to start that way.
	AllowOpenAdminReads bool `json:"allowOpenAdminReads"`

	// Envoy is the Envoy rate-limit service (serve_envoy.go).
	Envoy envoyConfig `json:"envoy"`
}

type redisConfig struct {
	Addrs       []string `json:"addrs"`      // one: single server; several: cluster
	MasterName  string   `json:"masterName"` // set: Addrs are sentinels of this master
	Cluster     bool     `json:"cluster"`    // one address that is a cluster endpoint
	DB          int      `json:"db"`
	Username    string   `json:"username"`
	PasswordEnv string   `json:"passwordEnv"` // environment variable holding the password
	TLS         bool     `json:"tls"`         // TLS to Redis with the system roots
}

type tlsConfig struct {
	Cert     string `json:"cert"`
	Key      string `json:"key"`
	ClientCA string `json:"clientCA"` // set: clients must present a certificate it signed
}

// duration is a time.Duration written as a Go duration string in JSON.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string like \"20ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

func defaultServeConfig() serveConfig {
	return serveConfig{Listen: "127.0.0.1:7600", MaxQPS: 30000, Timeout: duration(20 * time.Millisecond),
		ShutdownTimeout: duration(10 * time.Second), Prefix: "flowgate:", Redis: redisConfig{Addrs: []string{"127.0.0.1:6379"}},
		Envoy: envoyConfig{Pipelines: 2, MaxBatch: 1024}}
}

// parseServeFlags reads -config first, then lets every flag given on the
// command line override it.
func parseServeFlags(args []string, fs *flag.FlagSet) (serveConfig, error) {
	cf := defaultServeConfig()
	v := bindServeFlags(fs, &cf)
	if err := fs.Parse(args); err != nil {
		return cf, err
	}
	if fs.NArg() > 0 {
		return cf, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if v.config != "" {
		fromFile, err := readServeConfig(v.config)
		if err != nil {
			return cf, err
		}
		// Flags given on the command line win over the file: set them
		// again, on flags bound to the file's values.
		over := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		ov := bindServeFlags(over, &fromFile)
		var errs []error
		fs.Visit(func(f *flag.Flag) { errs = append(errs, over.Set(f.Name, f.Value.String())) })
		if err := errors.Join(errs...); err != nil {
			return cf, err
		}
		cf, v = fromFile, ov
	}
	cf.Redis.Addrs = splitList(v.redisAddrs)
	cf.Timeout = duration(v.timeout)
	cf.ShutdownTimeout = duration(v.shutdown)
	cf.InlineRules = &v.inline
	return cf, cf.validate()
}

// serveFlagVars holds the flags that are not a field of serveConfig as
// they are: -config itself, and those whose field has another type.
type serveFlagVars struct {
	config, redisAddrs string
	timeout, shutdown  time.Duration
	inline             bool
}

// bindServeFlags defines serve's flags on fs, each defaulting to and
// setting its field of cf, or of the returned serveFlagVars.
func bindServeFlags(fs *flag.FlagSet, cf *serveConfig) *serveFlagVars {
	v := &serveFlagVars{}
	inline := cf.InlineRules == nil || *cf.InlineRules
	fs.StringVar(&v.config, "config", "", "JSON configuration file (flags override it)")
	fs.StringVar(&cf.Listen, "listen", cf.Listen, "gRPC listen address")
	fs.StringVar(&cf.MetricsListen, "metrics-listen", cf.MetricsListen, "HTTP address serving /metrics (empty: off)")
	fs.StringVar(&cf.Rules, "rules", cf.Rules, "rules document served by id, hot reloaded")
	fs.StringVar(&v.redisAddrs, "redis", strings.Join(cf.Redis.Addrs, ","), "Redis address(es), comma separated; several mean a cluster")
	fs.StringVar(&cf.Redis.MasterName, "redis-master", cf.Redis.MasterName, "sentinel master name (-redis lists the sentinels)")
	fs.BoolVar(&cf.Redis.Cluster, "redis-cluster", cf.Redis.Cluster, "a single -redis address is a cluster endpoint")
	fs.IntVar(&cf.Redis.DB, "redis-db", cf.Redis.DB, "Redis database (single server and sentinel)")
	fs.StringVar(&cf.Redis.Username, "redis-user", cf.Redis.Username, "Redis ACL user")
	fs.StringVar(&cf.Redis.PasswordEnv, "redis-password-env", cf.Redis.PasswordEnv, "environment variable holding the Redis password")
	fs.BoolVar(&cf.Redis.TLS, "redis-tls", cf.Redis.TLS, "connect to Redis with TLS")
	fs.StringVar(&cf.TLS.Cert, "tls-cert", cf.TLS.Cert, "server certificate (PEM); with -tls-key turns TLS on")
	fs.StringVar(&cf.TLS.Key, "tls-key", cf.TLS.Key, "server key (PEM)")
	fs.StringVar(&cf.TLS.ClientCA, "tls-client-ca", cf.TLS.ClientCA, "CA bundle (PEM) clients' certificates must chain to; set: client certificates required")
	fs.StringVar(&cf.TokenFile, "token-file", cf.TokenFile, "file whose first line is the shared bearer token clients must send")
	fs.StringVar(&cf.TokenEnv, "token-env", cf.TokenEnv, "environment variable holding the shared bearer token")
	fs.Int64Var(&cf.MaxQPS, "max-qps", cf.MaxQPS, "requests accepted per second and namespace (Sentinel's maxAllowedQps); <= 0: no cap")
	fs.DurationVar(&v.timeout, "timeout", time.Duration(cf.Timeout), "bound on each Redis call")
	fs.DurationVar(&v.shutdown, "shutdown-timeout", time.Duration(cf.ShutdownTimeout), "longest wait for calls in flight on shutdown")
	fs.StringVar(&cf.Prefix, "prefix", cf.Prefix, "Redis key prefix")
	fs.BoolVar(&v.inline, "inline-rules", inline, "accept rules sent inline by clients (false: only the served document's rules)")
	fs.StringVar(&cf.AdminTokenEnv, "admin-token-env", cf.AdminTokenEnv, "environment variable holding the bearer token for the admin API's writes (empty: read-only)")
	fs.StringVar(&cf.AdminReadTokenEnv, "admin-read-token-env", cf.AdminReadTokenEnv,
		"environment variable holding the bearer token the admin API's reads need (empty: reads open, loopback only)")
	fs.BoolVar(&cf.NoAdmin, "no-admin", cf.NoAdmin, "serve /metrics alone on -metrics-listen, without the admin API and console")
	fs.BoolVar(&cf.AllowUnauthenticated, "allow-unauthenticated", cf.AllowUnauthenticated,
		"listen beyond loopback with neither a token nor client certificates (logs a warning)")
	fs.BoolVar(&cf.AllowCleartextToken, "allow-cleartext-token", cf.AllowCleartextToken,
		"listen beyond loopback with a token but no TLS, the token in clear on the network (logs a warning)")
	fs.BoolVar(&cf.AllowOpenAdminReads, "allow-open-admin-reads", cf.AllowOpenAdminReads,
		"serve the admin reads beyond loopback without -admin-read-token-env (logs a warning)")
	bindEnvoyFlags(fs, &cf.Envoy)
	return v
}

// readServeConfig reads a -config file over the defaults; a field the
// file does not know is an error.
func readServeConfig(path string) (serveConfig, error) {
	cf := defaultServeConfig()
	data, err := os.ReadFile(path)
	if err != nil {
		return cf, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cf); err != nil {
		return cf, fmt.Errorf("%s: %w", path, err)
	}
	return cf, nil
}

func (cf *serveConfig) validate() error {
	var errs []error
	if len(cf.Redis.Addrs) == 0 {
		errs = append(errs, errors.New("redis: at least one address"))
	}
	if (cf.TLS.Cert == "") != (cf.TLS.Key == "") {
		errs = append(errs, errors.New("tls: cert and key go together"))
	}
	if cf.TLS.ClientCA != "" && cf.TLS.Cert == "" {
		errs = append(errs, errors.New("tls: clientCA needs a server cert and key"))
	}
	if cf.AdminTokenEnv != "" && (cf.Rules == "" || cf.MetricsListen == "") {
		errs = append(errs, errors.New("adminTokenEnv: needs rules (the document writes go back to) and metricsListen (where the admin is served)"))
	}
	if cf.AdminReadTokenEnv != "" && cf.MetricsListen == "" {
		errs = append(errs, errors.New("adminReadTokenEnv: needs metricsListen (where the admin is served)"))
	}
	if cf.NoAdmin && (cf.AdminTokenEnv != "" || cf.AdminReadTokenEnv != "") {
		errs = append(errs, errors.New("noAdmin: no admin is served, so adminTokenEnv and adminReadTokenEnv have nothing to guard"))
	}
	if cf.Timeout <= 0 || cf.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("timeout, shutdownTimeout: must be > 0"))
	}
	errs = append(errs, cf.Envoy.validate())
	return errors.Join(errs...)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// redisClient builds the client `flowgate serve` hands the token server,
// with the settings the README gives users.
func redisClient(rc redisConfig, timeout time.Duration) (redis.UniversalClient, error) {
	password := ""
	if rc.PasswordEnv != "" {
		password = os.Getenv(rc.PasswordEnv)
	}
	opts := &redis.UniversalOptions{
		Addrs: rc.Addrs, MasterName: rc.MasterName, IsClusterMode: rc.Cluster, DB: rc.DB,
		Username: rc.Username, Password: password,
		// The token server bounds each call with a deadline; let it reach
		// the socket (the server rebuilds a single or cluster client with
		// these settings anyway; a sentinel client it uses as given).
		ContextTimeoutEnabled: true,
		// Never re-send a decision after a timeout: it may have counted.
		MaxRetries: -1,
		// One dial per call: a dead Redis fails the call at once instead
		// of 5 dials 100ms apart; the server's prober reconnects.
		DialerRetries: 1,
		DialTimeout:   max(timeout, time.Second),
	}
	if rc.TLS {
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return redis.NewUniversalClient(opts), nil
}

// exposure says whether serving cf is safe to start: ok when Listen is on
// loopback, or callers must authenticate (a token, or client certificates)
// and a token travels only inside TLS; otherwise an error, or, with
// AllowUnauthenticated (no credential) or AllowCleartextToken (a token
// without TLS), a warning to log. Anyone who reaches an open token server
// can take every quota, and anyone who reads a cleartext token can too.
func (cf *serveConfig) exposure(hasToken bool) (warning string, err error) {
	if loopbackOnly(cf.Listen) {
		return "", nil
	}
	if hasToken && cf.TLS.Cert == "" {
		msg := fmt.Sprintf("listen %q reaches beyond loopback and the bearer token would cross the network in clear (no TLS)", cf.Listen)
		if !cf.AllowCleartextToken {
			return "", errors.New(msg + ": set -tls-cert and -tls-key, listen on 127.0.0.1, or pass -allow-cleartext-token")
		}
		return msg + ": anyone who can watch the network can read the token", nil
	}
	if hasToken || cf.TLS.ClientCA != "" {
		return "", nil
	}
	msg := fmt.Sprintf("listen %q reaches beyond loopback and callers are not authenticated (no token, no client certificates)", cf.Listen)
	if !cf.AllowUnauthenticated {
		return "", errors.New(msg + ": set -token-file/-token-env or -tls-client-ca, listen on 127.0.0.1, or pass -allow-unauthenticated")
	}
	return msg + ": anyone who can connect can take and release tokens", nil
}

// adminExposure is exposure for the admin reads on MetricsListen: ok when
// it or the admin is off, it is on loopback, or reads need a token;
// otherwise an error, or,
// with AllowOpenAdminReads, a warning to log. Top keys and key states name
// users and client IPs, and the rules show every limit.
func (cf *serveConfig) adminExposure(hasReadToken bool) (warning string, err error) {
	if cf.MetricsListen == "" || cf.NoAdmin || hasReadToken || loopbackOnly(cf.MetricsListen) {
		return "", nil
	}
	msg := fmt.Sprintf("metrics-listen %q reaches beyond loopback and the admin reads (/flowgate/api/topkeys, /api/key, /api/rules: user ids, client IPs, rules) need no token", cf.MetricsListen)
	if !cf.AllowOpenAdminReads {
		return "", errors.New(msg + ": set -admin-read-token-env, listen on 127.0.0.1, pass -no-admin (serve /metrics alone) or -allow-open-admin-reads")
	}
	return msg + ": anyone who can connect can read them", nil
}

// loopbackOnly reports whether addr (host:port) listens on loopback only.
// An empty host, 0.0.0.0 or :: listen on every interface; a host name other
// than localhost may resolve anywhere, so it does not count as loopback.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
