package rules

import (
	"strings"
	"testing"
)

// TestAdaptiveSystemCPU: the adaptive section's systemCPU is the system
// guard's CPU threshold (cpuconfig.Config.SystemGuard.CPU, its owner's
// check), written back by Format.
func TestAdaptiveSystemCPU(t *testing.T) {
	doc, err := Parse([]byte(`{"rules": [], "adaptive": {"systemCPU": 0.9}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Adaptive.SystemGuard.CPU; got != 0.9 {
		t.Errorf("SystemGuard.CPU %v, want 0.9", got)
	}
	if out := string(doc.Format()); !strings.Contains(out, `"systemCPU": 0.9`) {
		t.Errorf("Format lost systemCPU:\n%s", out)
	}
	_, err = Parse([]byte(`{"rules": [], "adaptive": {"systemCPU": 1.5}}`))
	if err == nil || !strings.Contains(err.Error(), "adaptive.systemCPU") {
		t.Errorf("systemCPU 1.5: %v, want a problem at adaptive.systemCPU", err)
	}
}
