package cluster

import (
	"fmt"
	"strings"

	"github.com/flowgate/flowgate/flow"
)

// algoSpec is what Go and Lua must agree on for one algorithm: its code
// (its index in algorithms, plus 1) names it in ARGV and in ALGO[code],
// and nparams is how many parameters follow the code in ARGV.
type algoSpec struct {
	algo    flow.Algorithm
	file    string // lua/<file>, which registers ALGO[code]
	nparams int    // p1..p<nparams>, see the file's header
	members bool   // keeps sorted-set members: needs zset.lua and a per-call nonce
}

// algorithms is the one table of algorithm codes. The Lua side's copy (the
// NPARAM table in prelude.lua, NALGO in prelude1.lua) is rendered from it
// by renderLuaTable; TestLuaTableMatches fails when they differ.
var algorithms = [...]algoSpec{
	{flow.AlgoTokenBucket, "token_bucket.lua", 4, false},
	{flow.AlgoWarmUp, "warm_up.lua", 7, false},
	{flow.AlgoLeakyBucket, "leaky_bucket.lua", 4, false},
	{flow.AlgoFixedWindow, "fixed_window.lua", 2, false},
	{flow.AlgoSlidingWindow, "sliding_window.lua", 3, false},
	{flow.AlgoSlidingLog, "sliding_log.lua", 2, true},
	{flow.AlgoConcurrency, "concurrency.lua", 2, true},
}

// numAlgos is the number of algorithm codes, 1..numAlgos.
const numAlgos = len(algorithms)

// spec returns the entry of code (1..numAlgos).
func spec(code int) *algoSpec { return &algorithms[code-1] }

// codeOf returns the algorithm's code, or false if Redis cannot decide it.
func codeOf(a flow.Algorithm) (int, bool) {
	for i := range algorithms {
		if algorithms[i].algo == a {
			return i + 1, true
		}
	}
	return 0, false
}

// membersMask is the set of codes (bit code-1) that keep sorted-set members.
var membersMask = func() (m int) {
	for i, a := range algorithms {
		if a.members {
			m |= 1 << i
		}
	}
	return m
}()

// Markers around the rendered part of a prelude.
const (
	luaTableBegin = "-- BEGIN rendered from cluster/algorithms.go; do not edit (go test ./cluster -run TestLuaTableMatches -update)\n"
	luaTableEnd   = "-- END rendered\n"
)

// renderLuaTable renders the Lua side of algorithms for a prelude, markers
// included: for the generic prelude (full) NPARAM, the parameter count
// indexed by code; for prelude1.lua NALGO, the number of codes.
func renderLuaTable(full bool) string {
	var b strings.Builder
	b.WriteString(luaTableBegin)
	b.WriteString("-- Algorithm codes:")
	for i, a := range algorithms {
		fmt.Fprintf(&b, " %d %s", i+1, a.algo)
		if i < numAlgos-1 {
			b.WriteByte(',')
		}
	}
	b.WriteString(".\n")
	if !full {
		fmt.Fprintf(&b, "local NALGO = %d\n", numAlgos)
	} else {
		b.WriteString("-- NPARAM[code]: how many parameters follow the code in ARGV.\nlocal NPARAM = {")
		for i, a := range algorithms {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d", a.nparams)
		}
		b.WriteString("}\n")
	}
	b.WriteString(luaTableEnd)
	return b.String()
}

// burstOf is a token_bucket's burst at the effective limit: stated for the
// nominal Limit, it scales with the rate as flow's local bucket does
// (Guava's maxBurstSeconds).
func burstOf(r *flow.Rule, limit float64) float64 {
	burst := r.Burst
	if burst <= 0 {
		burst = r.Limit
	}
	return burst * limit / r.Limit
}

// mostTokens is the largest request r grants at the effective limit, as
// flow's local limiters count it: whole permits per window (or in flight),
// at least 1; a token_bucket's burst when that is larger. Each script
// refuses a request above its p<most> parameter as never too.
func mostTokens(r *flow.Rule, limit float64) int64 {
	if r.Algorithm == flow.AlgoTokenBucket {
		return capacity(max(limit, burstOf(r, limit)))
	}
	return capacity(limit)
}
