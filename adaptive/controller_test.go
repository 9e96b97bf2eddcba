package adaptive_test

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/adaptive"
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// cpuSignal is an injected CPU reading the test sets between steps.
type cpuSignal struct {
	v   atomic.Uint64
	err atomic.Pointer[error]
}

func (s *cpuSignal) set(x float64) { s.v.Store(math.Float64bits(x)) }
func (s *cpuSignal) CPU() (float64, error) {
	if e := s.err.Load(); e != nil {
		return 0, *e
	}
	return math.Float64frombits(s.v.Load()), nil
}

func newEngine(t *testing.T, clk clock.Clock) *flow.Engine {
	t.Helper()
	eng := flow.NewEngine(flow.WithClock(clk))
	err := eng.LoadRules([]flow.Rule{
		{ID: "scaled", Resource: "api", Algorithm: flow.AlgoFixedWindow, Limit: 100, Window: time.Second, Adaptive: true},
		{ID: "fixed", Resource: "api", Algorithm: flow.AlgoTokenBucket, Limit: 1000, Window: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

func effective(eng *flow.Engine, id string) float64 {
	for _, r := range eng.Snapshot().Rules {
		if r.ID == id {
			return r.EffectiveLimit
		}
	}
	return math.NaN()
}

// The controller drives a real engine: the factor reaches the adaptive rule
// (and only it), and the admitted rate follows.
func TestControllerDrivesEngine(t *testing.T) {
	clk := clock.NewFake(start)
	eng := newEngine(t, clk)
	cpu := &cpuSignal{}
	c := adaptive.NewController(eng, adaptive.WithSampler(cpu), adaptive.WithClock(clk))
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	step := func(x float64, n int) {
		t.Helper()
		cpu.set(x)
		for range n {
			clk.Advance(250 * time.Millisecond)
			if err := c.Step(); err != nil {
				t.Fatal(err)
			}
		}
	}
	passedInASecond := func() int {
		clk.Advance(time.Second) // a fresh fixed window
		n := 0
		for range 200 {
			if p, err := eng.Entry("api"); err == nil {
				p.Exit()
				n++
			}
		}
		return n
	}
	if got := passedInASecond(); got != 100 {
		t.Fatalf("before the controller acts: %d passed, want 100", got)
	}
	step(0.6, 4)
	step(0.97, 8)
	f := c.Factor()
	if f >= 0.85 || f < 0.1 {
		t.Fatalf("factor after a hot spell = %.4f, want in [0.1, 0.85)", f)
	}
	if got := eng.AdaptiveFactor(); got != f {
		t.Errorf("engine factor %.4f, controller factor %.4f; want equal", got, f)
	}
	if got, want := effective(eng, "scaled"), 100*f; math.Abs(got-want) > 1e-9 {
		t.Errorf("adaptive rule's effective limit %.4f, want %.4f", got, want)
	}
	if got := effective(eng, "fixed"); got != 1000 {
		t.Errorf("non-adaptive rule's effective limit %.4f, want 1000", got)
	}
	if got, want := passedInASecond(), int(math.Floor(100*f)); got < want-1 || got > want+1 {
		t.Errorf("at factor %.4f: %d passed in a window, want about %d", f, got, want)
	}
	if got := c.CPU(); got != 0.97 {
		t.Errorf("CPU() = %v, want the last sample 0.97", got)
	}
	st := c.State()
	if st.Published != f || st.CPU < 0.88 || st.LastCut == 0 {
		t.Errorf("State() = %+v, want the published factor, a hot CPU and a cut", st)
	}
	step(0.4, 40)
	if got := c.Factor(); got != 1 || eng.AdaptiveFactor() != 1 {
		t.Errorf("after cooling: controller %.4f engine %.4f, want 1", got, eng.AdaptiveFactor())
	}
	if got := effective(eng, "scaled"); got != 100 {
		t.Errorf("effective limit after cooling = %v, want 100", got)
	}
}

func TestControllerSkipsFailedSamples(t *testing.T) {
	clk := clock.NewFake(start)
	eng := newEngine(t, clk)
	cpu := &cpuSignal{}
	c := adaptive.NewController(eng, adaptive.WithSampler(cpu), adaptive.WithClock(clk))
	cpu.set(0.99)
	for range 3 {
		_ = c.Step()
	}
	before := c.State()
	fail := error(errors.Join(adaptive.ErrSkipped, errors.New("read cpu.stat: EIO")))
	cpu.err.Store(&fail)
	for i := range 5 {
		if err := c.Step(); !errors.Is(err, adaptive.ErrSkipped) {
			t.Fatalf("step %d: err = %v, want ErrSkipped", i, err)
		}
	}
	after := c.State()
	if after.Skipped != before.Skipped+5 || after.Factor != before.Factor || after.CPU != before.CPU || after.Samples != before.Samples {
		t.Errorf("after 5 failed samples: %+v; before %+v; want only Skipped +5", after, before)
	}
	if after.Decision != adaptive.DecisionSkip {
		t.Errorf("decision = %v, want skip", after.Decision)
	}
}

func TestControllerInvalidConfig(t *testing.T) {
	clk := clock.NewFake(start)
	eng := newEngine(t, clk)
	c := adaptive.NewController(eng, adaptive.WithClock(clk), adaptive.WithTarget(1.5), adaptive.WithBand(0.9, 0.5),
		adaptive.WithSampler(adaptive.SamplerFunc(func() (float64, error) { return 1, nil })))
	err := c.Err()
	for _, field := range []string{"cpuTarget", "bandLow"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Err() = %v, want it to name %s", err, field)
		}
	}
	for range 10 {
		if c.Step() == nil {
			t.Fatal("Step with an invalid config returned nil")
		}
	}
	if eng.AdaptiveFactor() != 1 {
		t.Error("a disabled controller touched the engine")
	}
	c.Start() // does nothing
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := adaptive.NewController(nil).Err(); err == nil {
		t.Error("nil engine: want an error")
	}
}

func TestControllerLogsChanges(t *testing.T) {
	clk := clock.NewFake(start)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cpu := &cpuSignal{}
	c := adaptive.NewController(newEngine(t, clk), adaptive.WithSampler(cpu), adaptive.WithClock(clk), adaptive.WithLogger(log))
	cpu.set(0.5)
	_ = c.Step()
	if buf.Len() != 0 {
		t.Errorf("logged without a change: %s", buf.String())
	}
	cpu.set(1)
	for range 3 {
		_ = c.Step()
	}
	out := buf.String()
	for _, want := range []string{"factor changed", "from=1", "decision=cut", `reason="cpu above band"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
}

// Start steps on its own goroutine; Close stops it (no leak), is idempotent
// and gives the engine back factor 1.
func TestControllerStartClose(t *testing.T) {
	clk := clock.NewFake(start)
	eng := newEngine(t, clk)
	var calls atomic.Int64
	stepped := make(chan struct{}, 1)
	sampler := adaptive.SamplerFunc(func() (float64, error) {
		if calls.Add(1) == 20 {
			stepped <- struct{}{}
		}
		return 1, nil
	})
	c := adaptive.NewController(eng, adaptive.WithSampler(sampler), adaptive.WithClock(clk))
	c.Start()
	c.Start() // a second Start is a no-op
	<-stepped // the fake clock's Sleep returns at once: 20 steps come quickly
	if !loopRunning() {
		t.Fatal("no controller goroutine found while started: the leak check would see nothing")
	}
	if f := eng.AdaptiveFactor(); f >= 1 {
		t.Errorf("engine factor after 20 hot steps = %v, want < 1", f)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if f := eng.AdaptiveFactor(); f != 1 || c.Factor() != 1 {
		t.Errorf("after Close: engine factor %v, controller %v; want 1", f, c.Factor())
	}
	noLoopLeft(t)
	c.Start() // after Close: nothing
	if loopRunning() {
		t.Error("Start after Close started a goroutine")
	}
}

// Requirement 7: concurrent Entry while the controller changes rates, under -race.
func TestControllerConcurrentEntry(t *testing.T) {
	clk := clock.NewFake(start)
	eng := newEngine(t, clk)
	var hot atomic.Bool
	c := adaptive.NewController(eng, adaptive.WithClock(clk), adaptive.WithSystemGuard(0.9),
		adaptive.WithSampler(adaptive.SamplerFunc(func() (float64, error) {
			if hot.Load() {
				return 1, nil
			}
			return 0.3, nil
		})))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if p, err := eng.Entry("api", flow.WithUser("u")); err == nil {
					p.Exit()
				}
				_ = c.Factor()
			}
		})
	}
	for i := range 400 {
		hot.Store(i/40%2 == 0)
		clk.Advance(50 * time.Millisecond)
		if err := c.Step(); err != nil {
			t.Fatal(err)
		}
		_ = c.State()
	}
	close(stop)
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if eng.AdaptiveFactor() != 1 || eng.Snapshot().SystemLimit != 0 {
		t.Error("Close did not restore the engine")
	}
}

func BenchmarkStep(b *testing.B) {
	clk := clock.NewFake(start)
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules([]flow.Rule{{ID: "r", Resource: "api", Algorithm: flow.AlgoTokenBucket, Limit: 100, Adaptive: true}}); err != nil {
		b.Fatal(err)
	}
	xs := []float64{0.6, 0.95, 0.95, 0.9, 0.8, 0.5, 0.5, 0.75, 0.8, 0.8}
	for _, guard := range []float64{0, 0.9} {
		name := "guard=off"
		if guard > 0 {
			name = "guard=on"
		}
		b.Run(name, func(b *testing.B) {
			i := 0
			c := adaptive.NewController(eng, adaptive.WithClock(clk), adaptive.WithSystemGuard(guard),
				adaptive.WithSampler(adaptive.SamplerFunc(func() (float64, error) { i++; return xs[i%len(xs)], nil })))
			b.ReportAllocs()
			for b.Loop() {
				_ = c.Step()
			}
		})
	}
}

// On the real clock Start paces steps by Period; Close still stops it.
func TestControllerStartRealClock(t *testing.T) {
	eng := newEngine(t, clock.Real())
	var calls atomic.Int64
	stepped := make(chan struct{})
	c := adaptive.NewController(eng, adaptive.WithPeriod(time.Millisecond),
		adaptive.WithSampler(adaptive.SamplerFunc(func() (float64, error) {
			if calls.Add(1) == 3 {
				close(stepped)
			}
			return 0.5, nil
		})))
	c.Start()
	<-stepped
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := c.State().Samples; got < 3 {
		t.Errorf("samples after 3 sampler calls = %d, want >= 3", got)
	}
	noLoopLeft(t)
}

// loopRunning reports whether a controller's goroutine exists.
func loopRunning() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "adaptive.(*Controller).loop")
}

// noLoopLeft fails unless no controller goroutine is left. Close waits for
// the loop to finish, but a goroutine that has closed its done channel may
// take a moment more to vanish from the runtime's list.
func noLoopLeft(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); runtime.Gosched() {
		if !loopRunning() {
			return
		}
	}
	t.Error("a controller goroutine is still running after Close")
}

// SetConfig is how the rules document's "adaptive" section is reloaded: a
// bad config changes nothing, a good one applies from the next step.
func TestControllerSetConfig(t *testing.T) {
	clk := clock.NewFake(start)
	eng := newEngine(t, clk)
	cpu := &cpuSignal{}
	cpu.set(0.95)
	c := adaptive.NewController(eng, adaptive.WithClock(clk), adaptive.WithSampler(cpu), adaptive.WithSystemGuard(0.9))
	for range 3 {
		_ = c.Step()
	}
	if c.State().SystemLimit == 0 {
		t.Fatal("guard not on at cpu 0.95 above 0.9")
	}
	if err := c.SetConfig(adaptive.Config{CPUTarget: 3}); err == nil || !strings.Contains(err.Error(), "cpuTarget") {
		t.Errorf("SetConfig(bad) = %v, want an error naming cpuTarget", err)
	}
	if got := c.Config().CPUTarget; got != 0.8 {
		t.Errorf("after a bad SetConfig the target is %v, want 0.8 kept", got)
	}
	// A target of 0.97 puts 0.95 inside the band; the guard goes off.
	if err := c.SetConfig(adaptive.Config{CPUTarget: 0.97, BandLow: 0.9, BandHigh: 0.99}); err != nil {
		t.Fatal(err)
	}
	if eng.Snapshot().SystemLimit != 0 {
		t.Error("guard still on after a config without it")
	}
	before := c.Factor()
	for range 20 {
		_ = c.Step()
	}
	if got := c.Factor(); got != before {
		t.Errorf("cpu 0.95 inside the new band [0.9, 0.99]: factor %v -> %v, want held", before, got)
	}
}
