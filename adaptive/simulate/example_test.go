package simulate_test

import (
	"fmt"
	"time"

	"github.com/flowgate/flowgate/adaptive/simulate"
)

// A service offered twice its capacity behind a rule held at 60%: after the
// dead time its CPU climbs with a lag and settles at 0.1 + 0.9 × 0.6.
func ExampleModel_Run() {
	m := simulate.Model{Noise: -1}
	hold := func(cpu float64, now time.Time) float64 { return 0.6 }
	tr := m.Run(5*time.Second, simulate.Steps([]time.Duration{0}, []float64{2}), hold)
	for _, p := range tr[:4] {
		fmt.Printf("%v admitted %.2f cpu %.3f\n", p.T, p.Admitted, p.CPU)
	}
	fmt.Printf("%v admitted %.2f cpu %.3f\n", tr[len(tr)-1].T, tr[len(tr)-1].Admitted, tr[len(tr)-1].CPU)
	// Output:
	// 250ms admitted 1.00 cpu 0.100
	// 500ms admitted 0.60 cpu 0.100
	// 750ms admitted 0.60 cpu 0.312
	// 1s admitted 0.60 cpu 0.441
	// 5s admitted 0.60 cpu 0.640
}
