package flow_test

import (
	"fmt"

	"github.com/flowgate/flowgate/flow"
)

// An item value is decided by its own rule: the item's limit, the rule's
// burst ratio. Other values use the rule as it is.
func ExampleRule_ForItem() {
	r := flow.Rule{ID: "per-tenant", Resource: "r", Level: flow.LevelParam, Param: "tenant",
		Algorithm: flow.AlgoTokenBucket, Limit: 100, Burst: 200, Items: map[string]float64{"vip": 1000}}
	vip, ok := r.ForItem("vip")
	fmt.Println(vip.ID, vip.Limit, vip.Burst, len(vip.Items), ok)
	other, ok := r.ForItem("acme")
	fmt.Println(other.Limit, other.Burst, ok)
	// Output:
	// per-tenant 1000 2000 0 true
	// 100 200 false
}
