package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/flowgate/flowgate/internal/testing/judge"
)

// TestRun: under 5× load the guarded fleet sends fewer attempts than calls
// and most calls succeed; the unguarded fleet's retries amplify the load
// and most calls fail. The run is on real time: an unguarded run in which
// fewer attempts reached the backend than calls were offered did not
// deliver its load (the machine too busy, or the race detector), and one
// whose storm stayed weak while the process itself ran 100 ms late or
// more (judge.Meter) was starved of the CPU it needed to offer it; such a
// run cannot be judged and is tried again, up to three times in all; if
// none can be, only the guarded figures are checked.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: about 16 s")
	}
	for try := 1; try <= 3; try++ {
		var out bytes.Buffer
		m := judge.Start(time.Millisecond)
		res, err := run(&out, options{load: 5, phase: 6 * time.Second})
		late := m.Stop()
		t.Logf("try %d (the process ran up to %v late):\n%s", try, late, out.String())
		if len(res) != 2 {
			t.Fatalf("run: %v", err)
		}
		bare, guarded := res[0], res[1]
		if guarded.amplif > 1.1 || guarded.goodput < 0.6 {
			t.Fatalf("guarded: goodput %.2f, amplification %.2f; want >= 0.6 and <= 1.1", guarded.goodput, guarded.amplif)
		}
		if bare.amplif < 1 {
			continue // the unguarded fleet did not deliver its load
		}
		if err != nil {
			t.Fatal(err)
		}
		if bare.amplif < 1.5 && late >= 100*time.Millisecond && try < 3 {
			continue // a storm too weak, from a starved process
		}
		if bare.amplif < 1.5 || guarded.goodput < 2*bare.goodput {
			t.Errorf("unguarded: goodput %.2f, amplification %.2f; want the retry storm (>= 1.5) and under half the guarded goodput",
				bare.goodput, bare.amplif)
		}
		return
	}
	t.Log("the unguarded fleet never delivered its load: only the guarded figures were checked")
}
