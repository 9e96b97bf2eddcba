package cluster

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// algorithmFiles are the per-algorithm files, indexed by code-1, in the
// order they are assembled.
var algorithmFiles = []string{
	"token_bucket.lua", "warm_up.lua", "leaky_bucket.lua", "fixed_window.lua",
	"sliding_window.lua", "sliding_log.lua", "concurrency.lua",
}

// script is one Lua program with its SHA1, run by EVALSHA.
type script struct {
	src string
	sha string
	// The same, boxed once: a string put in an interface per call would
	// allocate.
	srcArg, shaArg any
	// used: some call ran it, so the prober loads it again after an outage.
	used atomic.Bool
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	return &script{src: src, sha: sha, srcArg: src, shaArg: sha}
}

// The decision mains. Each is assembled with the prelude and the
// algorithms a request uses (a bit set of algorithm codes), so one call
// decides any mix of rules of one key, and Redis does not rebuild the
// functions of algorithms the request does not use on every call.
const (
	mainAcquire = iota
	mainLease
	mainRelease
	numMains
)

var mainFiles = [numMains]string{"acquire.lua", "lease.lua", "release.lua"}

// numMasks covers every set of the 7 algorithm codes (bit code-1).
const numMasks = 1 << 7

// decisionScripts holds, per main and algorithm set, the assembled script:
// all of them built once, at package initialisation (a few hundred
// kilobytes of text; Redis caches only those used).
var decisionScripts = func() (s [numMains][numMasks]*script) {
	for m := range numMains {
		for mask := 1; mask < numMasks; mask++ {
			s[m][mask] = assemble(mainFiles[m], mask)
		}
	}
	return s
}()

// scriptFor returns main m for the algorithm set mask.
func scriptFor(m, mask int) *script { return decisionScripts[m][mask] }

// singleAcquire holds, per algorithm code, the acquire script for a
// request of one rule (prelude1.lua + that algorithm + acquire1.lua): the
// common case of one cluster rule at a level, without the generic
// script's per-rule tables and loops.
var singleAcquire = func() (s [8]*script) {
	for code := 1; code <= 7; code++ {
		s[code] = assembleWith("prelude1.lua", "acquire1.lua", 1<<(code-1))
	}
	return s
}()

var (
	heartbeatScript = newScript(mustRead("heartbeat.lua"))
	renewScript     = newScript(mustRead("renew.lua"))
)

// allScripts lists every script, for the prober to reload the used ones.
func allScripts() []*script {
	out := []*script{heartbeatScript, renewScript}
	for m := range numMains {
		out = append(out, decisionScripts[m][1:]...)
	}
	return append(out, singleAcquire[1:]...)
}

func mustRead(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name)
	if err != nil {
		panic("cluster: embedded " + name + ": " + err.Error()) // the build embeds it
	}
	return string(b)
}

// assemble joins the prelude, the algorithms of mask (bit code-1, in code
// order) and one main into a script.
func assemble(main string, mask int) *script { return assembleWith("prelude.lua", main, mask) }

// assembleWith is assemble with another prelude.
func assembleWith(prelude, main string, mask int) *script {
	var b strings.Builder
	b.WriteString(mustRead(prelude))
	if mask&(1<<5|1<<6) != 0 { // sliding_log, concurrency
		b.WriteString("\n")
		b.WriteString(mustRead("zset.lua"))
	}
	for i, f := range algorithmFiles {
		if mask&(1<<i) == 0 {
			continue
		}
		b.WriteString("\n")
		b.WriteString(mustRead(f))
	}
	b.WriteString("\n")
	b.WriteString(mustRead(main))
	return newScript(b.String())
}

// evalsha runs s by its SHA1 with args laid out as EVALSHA wants them:
// args[0] and args[1] are filled in here ("evalsha", sha), then numkeys,
// keys, argv. The command is never re-sent (see noRetry); after NOSCRIPT
// the server loads the script once and tries again (see eval).
func (s *script) evalsha(ctx context.Context, rdb redis.UniversalClient, args []any) (any, error) {
	args[0], args[1] = "evalsha", s.shaArg
	return do(ctx, rdb, args...)
}
