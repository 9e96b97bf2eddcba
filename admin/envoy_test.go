package admin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/flowgate/flowgate/flow"
)

func TestEnvoyView(t *testing.T) {
	get := func(h *Handler) map[string][]EnvoyDomain {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/envoy", nil))
		var out map[string][]EnvoyDomain
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
			t.Fatalf("GET /api/envoy: %d %s", rec.Code, rec.Body)
		}
		return out
	}
	if got := get(New(flow.NewEngine())); got["domains"] == nil || len(got["domains"]) != 0 {
		t.Errorf("without WithEnvoy: %v, want an empty list", got)
	}
	want := []EnvoyDomain{{Domain: "edge", Limits: []EnvoyLimit{{Path: "edge.client", RequestsPerUnit: 5, Unit: "minute", Algorithm: "token_bucket", Leased: true, Within: 3, Over: 1}}}}
	got := get(New(flow.NewEngine(), WithEnvoy(func() []EnvoyDomain { return want })))
	if len(got["domains"]) != 1 || got["domains"][0].Domain != "edge" || len(got["domains"][0].Limits) != 1 || got["domains"][0].Limits[0] != want[0].Limits[0] {
		t.Errorf("GET /api/envoy = %+v, want %+v", got, want)
	}
}
