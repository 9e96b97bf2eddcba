package flowgrpc

import (
	"context"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// Params from metadata: a tenant limit with an exception, and an origin
// allow list answered with PermissionDenied.
func TestParamsFromMetadata(t *testing.T) {
	tenants := flow.Rule{ID: "per-tenant", Resource: checkMethod, Level: flow.LevelParam, Param: "tenant",
		Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: 60e9, Items: map[string]float64{"vip": 3}}
	origins := flow.Rule{ID: "origins", Resource: checkMethod, Level: flow.LevelParam, Param: "origin",
		Algorithm: flow.AlgoAllow, Values: []string{"web"}}
	eng := newEngine(t, clock.NewFake(epoch), tenants, origins)
	ic := UnaryServerInterceptor(eng, WithParamsFromMetadata(MetadataParam{"tenant", "x-tenant"}, MetadataParam{"origin", "x-origin"}))
	info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
	call := func(kv ...string) codes.Code {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(kv...))
		_, err := ic(ctx, nil, info, func(context.Context, any) (any, error) { return nil, nil })
		return status.Code(err)
	}
	for _, c := range []struct {
		kv   []string
		want codes.Code
	}{
		{[]string{"x-tenant", "acme", "x-origin", "web"}, codes.OK},
		{[]string{"x-tenant", "acme", "x-origin", "web"}, codes.ResourceExhausted},
		{[]string{"x-tenant", "vip", "x-origin", "web"}, codes.OK},
		{[]string{"x-tenant", "vip", "x-origin", "web"}, codes.OK},
		{[]string{"x-tenant", "vip", "x-origin", "web"}, codes.OK},
		{[]string{"x-tenant", "vip", "x-origin", "web"}, codes.ResourceExhausted},
		{[]string{"x-tenant", "other", "x-origin", "cli"}, codes.PermissionDenied},
		{[]string{"x-tenant", "other"}, codes.PermissionDenied}, // no origin: not on the allow list
	} {
		if got := call(c.kv...); got != c.want {
			t.Errorf("%v: %v, want %v", c.kv, got, c.want)
		}
	}
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-origin", "cli"))
	_, err := ic(ctx, nil, info, func(context.Context, any) (any, error) { return nil, nil })
	st, _ := status.FromError(err)
	var reason string
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			reason = ei.Reason + " " + ei.Metadata["rule"] + " " + ei.Metadata["level"]
		}
	}
	if reason != "LIST_REFUSED origins param" {
		t.Fatalf("ErrorInfo: %q", reason)
	}
}
