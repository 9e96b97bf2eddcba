// Package wire converts between package flow's rules and levels and their
// protobuf form (package tokenpb), for the token service's client
// (cluster/remote) and server (cluster/tokenrpc); tokenpb itself stays free
// of flow, so the generated code depends on protobuf alone.
package wire

import (
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/flow"
)

// FromLevel is l on the wire.
func FromLevel(l flow.Level) tokenpb.Level {
	switch l {
	case flow.LevelUser:
		return tokenpb.Level_LEVEL_USER
	case flow.LevelIP:
		return tokenpb.Level_LEVEL_IP
	case flow.LevelParam:
		return tokenpb.Level_LEVEL_PARAM
	default:
		return tokenpb.Level_LEVEL_GLOBAL
	}
}

// ToLevel is l as flow knows it; an unknown value is an error.
func ToLevel(l tokenpb.Level) (flow.Level, error) {
	switch l {
	case tokenpb.Level_LEVEL_GLOBAL:
		return flow.LevelGlobal, nil
	case tokenpb.Level_LEVEL_USER:
		return flow.LevelUser, nil
	case tokenpb.Level_LEVEL_IP:
		return flow.LevelIP, nil
	case tokenpb.Level_LEVEL_PARAM:
		return flow.LevelParam, nil
	}
	return 0, fmt.Errorf("level: unknown value %d", int32(l))
}

// FromRule is r on the wire. Fields that only matter to the local engine
// (MaxKeys, IdleTTL) are not sent, nor are Items: the engine asks for an
// item value with the item's own rule (flow.Rule.ForItem), whose Limit is
// the item's.
func FromRule(r *flow.Rule) *tokenpb.Rule {
	pr := &tokenpb.Rule{
		Id: r.ID, Resource: r.Resource, Level: FromLevel(r.Level), Algorithm: r.Algorithm.String(),
		Limit: r.Limit, WindowNanos: int64(r.Window), Burst: r.Burst, WarmupNanos: int64(r.Warmup),
		ColdFactor: r.ColdFactor, Buckets: int32(r.Buckets), MaxWaitNanos: int64(r.MaxWait), Adaptive: r.Adaptive,
		Param: r.Param,
	}
	if r.Cluster != nil {
		pr.Threshold, pr.Fallback = r.Cluster.Threshold, r.Cluster.Fallback
	}
	return pr
}

// ToRule is pr as a flow.Rule with flow's defaults filled in, validated:
// every problem is reported, joined.
func ToRule(pr *tokenpb.Rule) (flow.Rule, error) {
	if pr == nil {
		return flow.Rule{}, errors.New("rule: missing")
	}
	lv, lerr := ToLevel(pr.GetLevel())
	algo, aerr := flow.ParseAlgorithm(pr.GetAlgorithm())
	if err := errors.Join(lerr, aerr); err != nil {
		return flow.Rule{}, err
	}
	r := flow.Rule{
		ID: pr.GetId(), Resource: pr.GetResource(), Level: lv, Algorithm: algo, Limit: pr.GetLimit(),
		Window: time.Duration(pr.GetWindowNanos()), Burst: pr.GetBurst(), Warmup: time.Duration(pr.GetWarmupNanos()),
		ColdFactor: pr.GetColdFactor(), Buckets: int(pr.GetBuckets()), MaxWait: time.Duration(pr.GetMaxWaitNanos()),
		Adaptive: pr.GetAdaptive(), Param: pr.GetParam(),
		Cluster: &flow.ClusterSpec{Threshold: pr.GetThreshold(), Fallback: pr.GetFallback()},
	}
	r = r.WithDefaults()
	if err := r.Validate(); err != nil {
		return flow.Rule{}, err
	}
	return r, nil
}
