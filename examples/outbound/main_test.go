package main

import (
	"bytes"
	"testing"
	"time"
)

// TestRun: under 5× load the unguarded fleet's retries amplify the load and
// most calls fail; the guarded fleet sends fewer attempts than calls and
// most succeed. The run is on real time: a try whose unguarded fleet shows
// no storm (the machine too busy to offer the load) cannot be judged and is
// tried again, once.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: about 16 s")
	}
	for try := 1; ; try++ {
		var out bytes.Buffer
		res, err := run(&out, options{load: 5, phase: 6 * time.Second})
		t.Logf("try %d:\n%s", try, out.String())
		if len(res) != 2 {
			t.Fatalf("run: %v", err)
		}
		bare, guarded := res[0], res[1]
		if bare.amplif < 1.5 && try < 2 {
			continue // the fleet did not offer enough load to storm
		}
		if err != nil {
			t.Fatal(err)
		}
		if bare.amplif < 1.5 {
			t.Errorf("unguarded amplification %.2f, want the retry storm (>= 1.5)", bare.amplif)
		}
		if guarded.amplif > 1.1 || guarded.goodput < 2*bare.goodput || guarded.goodput < 0.6 {
			t.Errorf("guarded: goodput %.2f (unguarded %.2f), amplification %.2f; want >= 0.6 and twice the unguarded, and <= 1.1",
				guarded.goodput, bare.goodput, guarded.amplif)
		}
		return
	}
}
