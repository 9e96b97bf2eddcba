package flowgrpc

import (
	"context"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/flowgate/flowgate/flow"
)

// DefaultPriorityMetadata is the incoming metadata key that carries a
// call's priority: "critical", "high", "normal" or "low".
const DefaultPriorityMetadata = "x-priority"

// WithPriorityMetadata sets the metadata key read for a server call's
// priority (see flow.WithPriority). Default DefaultPriorityMetadata; ""
// ignores priorities. As with flowhttp's header, it is believed only from a
// trusted peer (WithTrustedProxies) or with WithTrustPriority(true).
func WithPriorityMetadata(key string) Option {
	return func(cf *config) { cf.prioKey = strings.ToLower(key) }
}

// WithTrustPriority(true) believes the priority metadata from every peer.
// Default false.
func WithTrustPriority(all bool) Option { return func(cf *config) { cf.prioAll = all } }

// priority is the call's priority when the metadata is set, believed and
// valid.
func (cf *config) priority(ctx context.Context) (flow.Priority, bool) {
	if cf.prioKey == "" {
		return flow.PriorityNormal, false
	}
	vals := metadata.ValueFromIncomingContext(ctx, cf.prioKey)
	if len(vals) == 0 {
		return flow.PriorityNormal, false
	}
	if !cf.prioAll {
		p, ok := peer.FromContext(ctx)
		if !ok || p.Addr == nil || !cf.trustedPeer(peerAddr(p.Addr)) {
			return flow.PriorityNormal, false
		}
	}
	return flow.ParsePriority(vals[len(vals)-1])
}

// trustedPeer reports whether a is in the trusted proxies.
func (cf *config) trustedPeer(a netip.Addr) bool {
	for _, p := range cf.trusted {
		if a.IsValid() && p.Contains(a) {
			return true
		}
	}
	return false
}
