package cluster

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

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
	mainAcquire1 // acquire for one rule: prelude1.lua, acquire1.lua
	mainSettle   // settle a call's actual cost at Exit (flow.TokenRequest.Settle)
	numMains
)

var mainFiles = [numMains]string{"acquire.lua", "lease.lua", "release.lua", "acquire1.lua", "settle.lua"}

// numMasks covers every set of the algorithm codes (bit code-1).
const numMasks = 1 << numAlgos

// scripts holds the assembled scripts, per main and algorithm set, built
// on first use: 4 x 127 + 7 variants of 10-40 KB each would cost tens of
// megabytes at package load, and a program uses a handful. A slot is
// written once (CompareAndSwap), so a call after the first costs one
// atomic load and no lock; two first calls racing may both assemble, and
// both use the one stored.
var scripts [numMains][numMasks]atomic.Pointer[script]

// scriptFor returns main m for the algorithm set mask (for mainAcquire1,
// the one bit of the rule's code).
func scriptFor(m, mask int) *script {
	slot := &scripts[m][mask]
	if sc := slot.Load(); sc != nil {
		return sc
	}
	prelude := "prelude.lua"
	if m == mainAcquire1 {
		prelude = "prelude1.lua"
	}
	sc := assemble(prelude, mainFiles[m], mask)
	if slot.CompareAndSwap(nil, sc) {
		return sc
	}
	return slot.Load()
}

// The scripts of the background loops, small and built on first use too.
var (
	heartbeatScript = sync.OnceValue(func() *script { return newScript(mustRead("heartbeat.lua")) })
	renewScript     = sync.OnceValue(func() *script { return newScript(mustRead("renew.lua")) })
)

// builtScripts lists the scripts built so far (only those can have been
// used), for the prober to reload the used ones.
func builtScripts() []*script {
	out := []*script{heartbeatScript(), renewScript()}
	for m := range scripts {
		for mask := range scripts[m] {
			if sc := scripts[m][mask].Load(); sc != nil {
				out = append(out, sc)
			}
		}
	}
	return out
}

func mustRead(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name)
	if err != nil {
		panic("cluster: embedded " + name + ": " + err.Error()) // the build embeds it
	}
	return string(b)
}

// assemble joins a prelude, the algorithms of mask (bit code-1, in code
// order) and one main into a script.
func assemble(prelude, main string, mask int) *script {
	var b strings.Builder
	b.WriteString(mustRead(prelude))
	if mask&membersMask != 0 {
		b.WriteString("\n")
		b.WriteString(mustRead("zset.lua"))
	}
	for i, a := range algorithms {
		if mask&(1<<i) == 0 {
			continue
		}
		b.WriteString("\n")
		b.WriteString(mustRead(a.file))
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
