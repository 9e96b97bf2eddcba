package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flowgate/flowgate/admin"
	"github.com/flowgate/flowgate/flow"
)

// TestWithSnapshots shows another source's decisions: the resources and
// the time come from it, the rules from the engine.
func TestWithSnapshots(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	eng := flow.NewEngine()
	if err := eng.LoadRules([]flow.Rule{{ID: "held", Resource: "GET /held", Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Second}}); err != nil {
		t.Fatal(err)
	}
	fn := func() flow.Snapshot {
		rs := flow.ResourceStats{Resource: "GET /orders", Passed: 25}
		rs.Blocked[flow.LevelGlobal] = 15
		return flow.Snapshot{Time: at, AdaptiveFactor: 1, Resources: []flow.ResourceStats{rs}}
	}
	for _, tc := range []struct {
		name      string
		opts      []admin.Option
		decider   string
		resources []string
	}{
		{"engine", nil, "engine", []string{"GET /held"}},
		{"service", []admin.Option{admin.WithSnapshots(fn)}, "service", []string{"GET /orders"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			admin.New(eng, tc.opts...).ServeHTTP(w, httptest.NewRequest("GET", "/api/snapshot", nil))
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			var s admin.Snapshot
			if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range s.Resources {
				got = append(got, r.Resource)
			}
			if s.Decider != tc.decider || len(got) != len(tc.resources) || (len(got) > 0 && got[0] != tc.resources[0]) {
				t.Errorf("decider %q, resources %q; want %q, %q", s.Decider, got, tc.decider, tc.resources)
			}
			if len(s.Rules) != 1 || s.Rules[0].ID != "held" {
				t.Errorf("rules %+v, want the engine's rule held", s.Rules)
			}
			if tc.decider == "service" {
				r := s.Resources[0]
				if !s.Time.Equal(at) || r.Passed != 25 || r.Blocked["global"] != 15 {
					t.Errorf("time %v, resource %+v; want the source's %v, 25 passed, 15 blocked at global", s.Time, r, at)
				}
			}
		})
	}
}
