package cpuconfig_test

import (
	"fmt"

	"github.com/flowgate/flowgate/adaptive/cpuconfig"
)

// A target set alone takes the band around it; Check names each problem
// by its JSON field, as the rules document's "adaptive" section reports it.
func ExampleConfig_Check() {
	c := cpuconfig.Config{CPUTarget: 0.6}.WithDefaults()
	fmt.Println(c.BandLow, c.BandHigh, c.Period)
	cpuconfig.Config{CPUTarget: 0.6, BandHigh: 0.65, Settle: 99, CPUSource: "gpu"}.Check(func(field, msg string) {
		fmt.Println(field+":", msg)
	})
	// Output:
	// 0.5 0.68 250ms
	// settle: must be in [1, 32], got 99
	// cpuSource: must be auto, cgroup, process or host, got "gpu"
}
