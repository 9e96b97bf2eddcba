package flow

import "testing"

// An adaptive_concurrency rule at the param level keeps one limit per
// value: one tenant filling its limit refuses only that tenant.
func TestAdaptiveConcurrencyPerParamValue(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "a", Resource: "r", Level: LevelParam, Param: "tenant",
		Algorithm: AlgoAdaptiveConcurrency, InitialLimit: 2, MinLimit: 1, MaxLimit: 10})
	var held []Permit
	for i := range 2 {
		p, err := e.Entry("r", WithParam("tenant", "acme"))
		if err != nil {
			t.Fatalf("acme call %d: %v, want a pass under its limit of 2", i, err)
		}
		held = append(held, p)
	}
	if _, err := e.Entry("r", WithParam("tenant", "acme")); err == nil {
		t.Fatal("third acme call passed, want it refused at acme's limit of 2")
	} else if be := err.(*BlockError); be.Level != LevelParam || be.RuleID != "a" {
		t.Fatalf("refusal %+v, want level param and rule a", be)
	}
	p, err := e.Entry("r", WithParam("tenant", "globex"))
	if err != nil {
		t.Fatalf("globex: %v, want a pass (its own limit)", err)
	}
	p.Exit()
	if p, err := e.Entry("r"); err != nil {
		t.Fatalf("call without the param: %v, want it unchecked", err)
	} else {
		p.Exit()
	}
	held[0].Exit()
	if p, err := e.Entry("r", WithParam("tenant", "acme")); err != nil {
		t.Fatalf("acme after one exit: %v, want a pass", err)
	} else {
		p.Exit()
	}
	held[1].Exit()
}
