package judge

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestMeterSeesAStoppedProcess: a child stops this process for 100ms
// (SIGSTOP, then SIGCONT), as an overloaded machine would by not running
// it; the meter reports at least most of that, and Stop ends its goroutine.
func TestMeterSeesAStoppedProcess(t *testing.T) {
	m := Start(time.Millisecond)
	time.Sleep(20 * time.Millisecond) // let the meter run a few steps
	quiet := m.Worst()
	pid := strconv.Itoa(os.Getpid())
	if out, err := exec.Command("sh", "-c", "kill -STOP "+pid+"; sleep 0.1; kill -CONT "+pid).CombinedOutput(); err != nil {
		t.Fatalf("stop and continue: %v: %s", err, out)
	}
	time.Sleep(10 * time.Millisecond) // the meter's next wake-up after the pause
	worst := m.Stop()
	if worst < 80*time.Millisecond {
		t.Errorf("after a 100ms stop the meter saw %v, want >= 80ms (before the stop: %v)", worst, quiet)
	}
	if again := m.Stop(); again != worst {
		t.Errorf("second Stop: %v, want %v", again, worst)
	}
}

// TestMeterAddsUpManyShortStalls: five stops of 30ms each (a process that
// gets a CPU only now and then) add up in Lost, which Stop reports, while
// Worst sees only one of them.
func TestMeterAddsUpManyShortStalls(t *testing.T) {
	m := Start(time.Millisecond)
	pid := strconv.Itoa(os.Getpid())
	script := ""
	for range 5 {
		script += "kill -STOP " + pid + "; sleep 0.03; kill -CONT " + pid + "; sleep 0.02; "
	}
	if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("stop and continue: %v: %s", err, out)
	}
	time.Sleep(10 * time.Millisecond)
	got := m.Stop()
	if lost := m.Lost(); got != lost || lost < 100*time.Millisecond {
		t.Errorf("after five 30ms stops: Stop %v, Lost %v (Worst %v); want Stop = Lost >= 100ms", got, lost, m.Worst())
	}
}
