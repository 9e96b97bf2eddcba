package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportCost: importing the package costs little at start-up, under
// 80 KB allocated at init, because scripts are assembled on first use, not
// at package load. It builds two programs that differ only in importing
// cluster, reads runtime.MemStats at the start of each one's main, and
// prints the difference.
func TestImportCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("no go command to build the programs with")
	}
	type figures struct{ total, heap, mallocs uint64 }
	var withBin string
	measure := func(name string) figures {
		t.Helper()
		bin := filepath.Join(t.TempDir(), name)
		if name == "with" {
			withBin = bin
		}
		if out, err := exec.Command(goBin, "build", "-o", bin, "./testdata/initcost/"+name).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
		out, err := exec.Command(bin).Output()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var f figures
		if _, err := fmt.Sscan(strings.TrimSpace(string(out)), &f.total, &f.heap, &f.mallocs); err != nil {
			t.Fatalf("%s printed %q: %v", name, out, err)
		}
		return f
	}
	with, without := measure("with"), measure("without")
	alloc := int64(with.total) - int64(without.total)
	live := int64(with.heap) - int64(without.heap)
	t.Logf("importing cluster at init: %d bytes allocated (%.2f MB) in %d allocations, %d bytes live",
		alloc, float64(alloc)/1e6, int64(with.mallocs)-int64(without.mallocs), live)
	// The package's own init, as the runtime reports it.
	cmd := exec.Command(withBin)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	trace, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("with, GODEBUG=inittrace=1: %v", err)
	}
	for _, line := range strings.Split(string(trace), "\n") {
		if strings.HasPrefix(line, "init github.com/flowgate/flowgate/cluster @") {
			t.Logf("GODEBUG=inittrace=1: %s", line)
		}
	}
	// About twice the 33–39 KB the README states: assembling the Lua
	// variants at package load again would cost megabytes.
	if alloc >= 80e3 {
		t.Errorf("importing cluster allocates %d bytes at init, want under 80 KB", alloc)
	}
}
