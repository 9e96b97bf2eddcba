package cluster

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/flow"
)

var update = flag.Bool("update", false, "rewrite the rendered part of lua/prelude*.lua from algorithms.go")

// TestLuaTableMatches: the algorithm codes and parameter counts in the Lua
// preludes are exactly what renderLuaTable makes of the Go table, and each
// algorithm file registers the code the table gives it. With -update it
// rewrites the preludes' rendered part instead.
func TestLuaTableMatches(t *testing.T) {
	for _, c := range []struct {
		file string
		full bool
	}{{"prelude.lua", true}, {"prelude1.lua", false}} {
		path := "lua/" + c.file
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		begin := strings.Index(src, "-- BEGIN")
		end := strings.Index(src, luaTableEnd)
		if begin < 0 || end < begin {
			t.Fatalf("%s: no rendered block (-- BEGIN ... %q)", path, luaTableEnd)
		}
		got, want := src[begin:end+len(luaTableEnd)], renderLuaTable(c.full)
		if got == want {
			continue
		}
		if !*update {
			t.Errorf("%s: rendered block differs from algorithms.go (go test ./cluster -run TestLuaTableMatches -update):\ngot:\n%s\nwant:\n%s", path, got, want)
			continue
		}
		if err := os.WriteFile(path, []byte(src[:begin]+want+src[end+len(luaTableEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for code := 1; code <= numAlgos; code++ {
		s := spec(code)
		src := mustRead(s.file)
		if reg := fmt.Sprintf("\nALGO[%d] = {", code); !strings.Contains(src, reg) {
			t.Errorf("lua/%s does not register %q (code %d in algorithms.go)", s.file, strings.TrimSpace(reg), code)
		}
		if got, ok := codeOf(s.algo); !ok || got != code {
			t.Errorf("codeOf(%v) = %d, %v; want %d", s.algo, got, ok, code)
		}
	}
	if _, ok := codeOf(flow.Algorithm(255)); ok {
		t.Error("codeOf of an unknown algorithm succeeded")
	}
}
