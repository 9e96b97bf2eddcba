package cluster

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportCost: importing the package costs little at start-up, because
// scripts are assembled on first use, not at package load. It builds two
// programs that differ only in importing cluster, reads runtime.MemStats
// at the start of each one's main, and prints the difference.
func TestImportCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the programs with")
	}
	type figures struct{ total, heap, mallocs uint64 }
	measure := func(name string) figures {
		t.Helper()
		bin := filepath.Join(t.TempDir(), name)
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
	if alloc >= 1e6 {
		t.Errorf("importing cluster allocates %d bytes at init, want under 1 MB", alloc)
	}
}
