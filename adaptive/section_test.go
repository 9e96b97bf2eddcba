package adaptive

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/rules"
)

func TestFromSection(t *testing.T) {
	doc, err := rules.Parse([]byte(`{"rules": [], "adaptive": {"cpuTarget": 0.6, "minFactor": 0.2, "period": "500ms"}}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	c := FromSection(doc.Adaptive)
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if c.CPUTarget != 0.6 || c.MinFactor != 0.2 || c.Period != 500*time.Millisecond {
		t.Fatalf("got target %v, minFactor %v, period %v; want 0.6, 0.2, 500ms", c.CPUTarget, c.MinFactor, c.Period)
	}
	if c.BandLow != doc.Adaptive.BandLow || c.BandHigh != doc.Adaptive.BandHigh {
		t.Fatalf("band = [%v, %v], want the document's [%v, %v]", c.BandLow, c.BandHigh, doc.Adaptive.BandLow, doc.Adaptive.BandHigh)
	}
	if got, want := c.AlphaUp, Defaults().AlphaUp; got != want {
		t.Fatalf("AlphaUp = %v, want the default %v", got, want)
	}
	if got := FromSection(nil); got != Defaults() {
		t.Fatalf("FromSection(nil) = %+v, want Defaults()", got)
	}
}
