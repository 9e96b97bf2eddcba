package flow

import (
	"strings"
	"testing"
	"time"
)

func TestSentinelWarmUpRules(t *testing.T) {
	base := Rule{Resource: "r", Algorithm: AlgoSentinelWarmUp, Limit: 10, Warmup: time.Second}
	with := func(f func(*Rule)) Rule { r := base; f(&r); return r }
	wantRuleProblems(t, []ruleProblem{
		{with(func(r *Rule) { r.Warmup = 0 }), "warmup"},
		{with(func(r *Rule) { r.ColdFactor = 2.5 }), "coldFactor"},
		{with(func(r *Rule) { r.Window = 2 * time.Second }), "window"},
		{with(func(r *Rule) { r.Cluster = &ClusterSpec{} }), "cluster"},
	})
	if err := NewEngine().LoadRules([]Rule{with(func(r *Rule) { r.MaxWait = time.Second; r.ColdFactor = 4 })}); err != nil {
		t.Errorf("a queueing sentinel_warm_up rule with cold factor 4: %v", err)
	}
}

func TestSentinelHotspotRules(t *testing.T) {
	base := Rule{Resource: "r", Algorithm: AlgoSentinelHotspot, Limit: 10}
	wantRuleProblems(t, []ruleProblem{
		{Rule{Resource: "r", Algorithm: AlgoSentinelHotspot, Limit: 10, Burst: 1.5}, "burst"},
		{Rule{Resource: "r", Algorithm: AlgoSentinelHotspot, Limit: 10, Window: 1500 * time.Microsecond}, "window"},
		{Rule{Resource: "r", Algorithm: AlgoSentinelHotspot, Limit: 10, Cluster: &ClusterSpec{}}, "cluster"},
	})
	if err := NewEngine().LoadRules([]Rule{base}); err != nil {
		t.Errorf("%+v: %v", base, err)
	}
}

func TestSentinelWindowRules(t *testing.T) {
	wantRuleProblems(t, []ruleProblem{
		{Rule{Resource: "r", Algorithm: AlgoSentinelWindow, Limit: 10, MaxWait: time.Second}, "maxWait"},
		{Rule{Resource: "r", Algorithm: AlgoSentinelWindow, Limit: 10, Window: 3 * time.Millisecond}, "window"},
		{Rule{Resource: "r", Algorithm: AlgoSentinelWindow, Limit: 10, Cluster: &ClusterSpec{}}, "cluster"},
	})
}

// ruleProblem is a rule LoadRules must refuse, naming field.
type ruleProblem struct {
	r     Rule
	field string
}

// wantRuleProblems loads each rule alone and wants an error naming its field.
func wantRuleProblems(t *testing.T, cases []ruleProblem) {
	t.Helper()
	for _, tc := range cases {
		err := NewEngine().LoadRules([]Rule{tc.r})
		if err == nil {
			t.Errorf("%+v: loaded, want a problem with %s", tc.r, tc.field)
			continue
		}
		if got := err.Error(); !strings.Contains(got, tc.field) {
			t.Errorf("%+v: %v, want it to name %s", tc.r, err, tc.field)
		}
	}
}
