package admin

import (
	"context"
	"log/slog"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

// Option configures a Handler.
type Option func(*config)

type config struct {
	source    Source
	writeBack func(ctx context.Context, data []byte) error
	writeTok  string
	readTok   string
	mtls      bool
	mtlsNames map[string]bool // nil: any verified client certificate
	log       *slog.Logger
	poll      time.Duration        // console refresh
	snapshots func() flow.Snapshot // the resources' decisions; nil: the engine's
	envoy     func() []EnvoyDomain // the Envoy rate-limit service's domains; nil: none
}

// Source is where the rules in force came from; *rules.Watcher is one.
// The handler reports its Status, and shows its Document (with the adaptive
// and alerting sections) while its rules are the ones in force.
type Source interface {
	Status() rules.Status
	Document() *rules.Document
}

var _ Source = (*rules.Watcher)(nil)

// WithSource reports src as the origin of the rules. Default: none; the
// rules are then shown as the engine holds them.
func WithSource(src Source) Option { return func(cf *config) { cf.source = src } }

// WithWriteBack has PUT /api/rules also hand the accepted document, as
// sent, to write (for example WriteFile(path) for the file a Watcher
// follows, so the change outlives a restart). A failed write-back is
// reported in the answer; the rules stay loaded. Default: none.
func WithWriteBack(write func(ctx context.Context, data []byte) error) Option {
	return func(cf *config) { cf.writeBack = write }
}

// WithWriteToken turns the write endpoints on for requests carrying
// "Authorization: Bearer token" (compared in constant time). An empty
// token turns nothing on. Default: writes off.
func WithWriteToken(token string) Option { return func(cf *config) { cf.writeTok = token } }

// WithWriteMTLS turns the write endpoints on for requests that came over
// TLS with a client certificate the server verified (tls.Config ClientAuth
// VerifyClientCertIfGiven or RequireAndVerifyClientCert) whose subject
// common name is one of names, or any verified certificate when names is
// empty. Default: writes off.
func WithWriteMTLS(names ...string) Option {
	return func(cf *config) {
		cf.mtls = true
		if len(names) > 0 {
			cf.mtlsNames = map[string]bool{}
			for _, n := range names {
				cf.mtlsNames[n] = true
			}
		}
	}
}

// WithReadToken requires "Authorization: Bearer token" on the read
// endpoints and the console's API calls too (a write credential also
// reads). The page itself is served without it and asks for the token.
// Default: reads open, as they change nothing; mount the handler where
// only operators reach it, since top keys name users and client IPs.
func WithReadToken(token string) Option { return func(cf *config) { cf.readTok = token } }

// WithSnapshots has GET /api/snapshot and the console show the resources
// and their decisions from fn instead of the engine's own calls: for a
// token service, whose engine decides nothing, its Snapshot method
// (cluster/tokenrpc.Server.Snapshot: per resource, what the service granted
// and refused, by level). The time and factors shown come from fn too; the
// rules in force and the breakers are still the engine's. fn is called
// once per request and must be safe for concurrent use. Default: the
// engine's Snapshot.
func WithSnapshots(fn func() flow.Snapshot) Option { return func(cf *config) { cf.snapshots = fn } }

// WithEnvoy shows the domains of an Envoy rate-limit service (flowgate
// serve -envoy-*) at GET /api/envoy and in the console: each configured
// limit with its rate, how it is decided, and its hits within, over and
// over in shadow mode. Default: none (the endpoint answers an empty list
// and the console hides the section).
func WithEnvoy(domains func() []EnvoyDomain) Option { return func(cf *config) { cf.envoy = domains } }

// EnvoyDomain is one domain of an Envoy rate-limit service configuration.
type EnvoyDomain struct {
	Domain string       `json:"domain"`
	Limits []EnvoyLimit `json:"limits"`
}

// EnvoyLimit is one configured limit of an EnvoyDomain and its hits.
type EnvoyLimit struct {
	Path            string `json:"path"` // domain.key_value.key
	RequestsPerUnit uint32 `json:"requestsPerUnit"`
	Unit            string `json:"unit,omitempty"`      // "" when unlimited
	Algorithm       string `json:"algorithm,omitempty"` // "" for a plain fixed window
	Unlimited       bool   `json:"unlimited,omitempty"`
	Shadow          bool   `json:"shadow,omitempty"`
	Leased          bool   `json:"leased,omitempty"`
	Settled         bool   `json:"settled,omitempty"`
	Within          uint64 `json:"within"`
	Over            uint64 `json:"over"`
	ShadowHits      uint64 `json:"shadowHits"`
}

// WithLogger logs refused writes and write-back failures. Default: silent.
func WithLogger(l *slog.Logger) Option { return func(cf *config) { cf.log = l } }

// DefaultPollInterval is how often the console refreshes by default.
const DefaultPollInterval = time.Second

// WithPollInterval sets how often the console refreshes (at least 250ms).
// Default DefaultPollInterval.
func WithPollInterval(d time.Duration) Option {
	return func(cf *config) { cf.poll = max(d, 250*time.Millisecond) }
}
