package metrics

import (
	"maps"
	"slices"
	"testing"

	"github.com/flowgate/flowgate/flow"
)

func TestIdleResources(t *testing.T) {
	bounds := []float64{0.1, 1}
	s := flow.Snapshot{
		Resources: []flow.ResourceStats{
			{Resource: "a", RTHist: flow.Histogram{Bounds: bounds}, WaitHist: flow.Histogram{Bounds: bounds}},
			{Resource: "c"},
		},
		Rules: []flow.RuleStats{{Resource: "d"}, {Resource: "a"}, {Resource: "b"}, {Resource: "d"}, {Resource: "c"}},
	}
	if got, want := idleResources(&s), []string{"b", "d"}; !slices.Equal(got, want) {
		t.Errorf("idleResources = %v, want %v", got, want)
	}
	z := zeroStats("b", &s)
	if z.Resource != "b" || !slices.Equal(z.RTHist.Bounds, bounds) || !slices.Equal(z.WaitHist.Bounds, bounds) || z.Passed != 0 {
		t.Errorf("zeroStats = %+v, want b with the shared bounds", z)
	}
}

func TestLabelKeysKeepsUnknown(t *testing.T) {
	want := []string{"local", "allow", "deny"}
	if got := labelKeys(want, nil); !slices.Equal(got, want) {
		t.Errorf("nil map: %v", got)
	}
	got := labelKeys(want, map[string]uint64{"allow": 1, "zzz": 2, "aaa": 3})
	if w := []string{"local", "allow", "deny", "aaa", "zzz"}; !slices.Equal(got, w) {
		t.Errorf("labelKeys = %v, want %v", got, w)
	}
	if !slices.Equal(want, []string{"local", "allow", "deny"}) {
		t.Errorf("labelKeys changed its input: %v", want)
	}
}

func TestCumulative(t *testing.T) {
	for _, tc := range []struct {
		name  string
		h     flow.Histogram
		count uint64
		want  map[float64]uint64
	}{
		{"per bucket to cumulative", flow.Histogram{Bounds: []float64{1, 2, 4}, Counts: []uint64{3, 0, 2, 5}}, 10,
			map[float64]uint64{1: 3, 2: 3, 4: 5}},
		{"empty", flow.Histogram{}, 0, map[float64]uint64{}},
		{"short counts", flow.Histogram{Bounds: []float64{1, 2}, Counts: []uint64{4}}, 4, map[float64]uint64{1: 4, 2: 4}},
	} {
		count, got := cumulative(tc.h)
		if count != tc.count || !maps.Equal(got, tc.want) {
			t.Errorf("%s: cumulative = %d %v, want %d %v", tc.name, count, got, tc.count, tc.want)
		}
	}
}
