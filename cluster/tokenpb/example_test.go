package tokenpb_test

import (
	"fmt"

	"github.com/flowgate/flowgate/cluster/tokenpb"
	"google.golang.org/protobuf/proto"
)

// A request survives the wire: marshalled and parsed back, it is the same.
func ExampleAcquireRequest() {
	in := &tokenpb.AcquireRequest{Resource: "GET /orders", Level: tokenpb.Level_LEVEL_USER, Key: "alice", Tokens: 1, RuleIds: []string{"orders"}}
	b, err := proto.Marshal(in)
	if err != nil {
		fmt.Println(err)
		return
	}
	var out tokenpb.AcquireRequest
	err = proto.Unmarshal(b, &out)
	fmt.Println(out.GetResource(), out.GetLevel(), out.GetKey(), out.GetRuleIds(), proto.Equal(in, &out), err)
	// Output:
	// GET /orders LEVEL_USER alice [orders] true <nil>
}
