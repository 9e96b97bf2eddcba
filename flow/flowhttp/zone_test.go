package flowhttp

import (
	"net/http"
	"testing"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// A link-local peer reaches the handler as "[fe80::1%eth0]:port" (net/http
// keeps the zone). The zone is dropped, so the IP deny list and the per-IP
// limit see the peer's address, directly and through a trusted proxy.
func TestZonedPeerMeetsDenyListAndPerIPLimit(t *testing.T) {
	deny := flow.Rule{ID: "no-link-local", Resource: "GET /x", Level: flow.LevelIP, Algorithm: flow.AlgoDeny, Values: []string{"fe80::/10"}}
	perIP := flow.Rule{ID: "per-ip", Resource: "GET /y", Level: flow.LevelIP, Algorithm: flow.AlgoFixedWindow, Limit: 1}
	for _, tc := range []struct {
		name, remote string
		header       http.Header
	}{
		{"peer", "[fe80::1%eth0]:1", nil},
		{"xff from a trusted proxy", "10.0.0.1:4000", http.Header{"X-Forwarded-For": {"fe80::1%eth0"}}},
		{"forwarded from a trusted proxy", "10.0.0.1:4000", http.Header{"Forwarded": {`for="[fe80::1%eth0]:9"`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := newEngine(t, clock.NewFake(epoch), deny, perIP)
			h := Middleware(eng, WithTrustedProxies(mustPrefixes(t, "10.0.0.0/8")...))(&okHandler{})
			if w := serve(h, "GET", "/x", tc.remote, tc.header); w.Code != http.StatusForbidden {
				t.Errorf("deny list: %d, want 403", w.Code)
			}
			codes := []int{}
			for _, remote := range []string{"[fe80::1%eth0]:1", "[fe80::1%eth1]:2", "[fe80::1]:3"} {
				if tc.header != nil {
					remote = tc.remote
				}
				codes = append(codes, serve(h, "GET", "/y", remote, tc.header).Code)
			}
			if codes[0] != 200 || codes[1] != 429 || codes[2] != 429 {
				t.Errorf("per-IP limit 1: codes %v, want [200 429 429] (one client, whatever the zone)", codes)
			}
		})
	}
}
