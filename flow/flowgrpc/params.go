package flowgrpc

import (
	"context"

	"google.golang.org/grpc/metadata"

	"github.com/flowgate/flowgate/flow"
)

// DefaultParamMaxLen is the longest param value used as it is (see
// WithParamMaxLen).
const DefaultParamMaxLen = 256

// MetadataParam names a call parameter (flow.WithParam) and the metadata key
// it is read from.
type MetadataParam struct{ Name, Key string }

// WithParamsFromMetadata has every call carry these call parameters, read
// from the first value of each key in the incoming metadata (server side)
// or the outgoing metadata (client side), for param-level rules and lists.
// A call without the key (or with "") does not carry that parameter.
// Default: none.
func WithParamsFromMetadata(params ...MetadataParam) Option {
	return func(cf *config) { cf.params = append(cf.params, params...) }
}

// WithParamMaxLen cuts param values longer than n bytes to their first n
// (n < 1 keeps the default). Default DefaultParamMaxLen.
func WithParamMaxLen(n int) Option {
	return func(cf *config) {
		if n >= 1 {
			cf.paramMax = n
		}
	}
}

// appendParams appends the call's params to opts.
func (cf *config) appendParams(ctx context.Context, opts []flow.EntryOption) []flow.EntryOption {
	in, _ := metadata.FromIncomingContext(ctx)
	out, _ := metadata.FromOutgoingContext(ctx)
	for _, p := range cf.params {
		v := ""
		if vs := in.Get(p.Key); len(vs) > 0 {
			v = vs[0]
		} else if vs := out.Get(p.Key); len(vs) > 0 {
			v = vs[0]
		}
		if v == "" {
			continue
		}
		if len(v) > cf.paramMax {
			v = v[:cf.paramMax]
		}
		opts = append(opts, flow.WithParam(p.Name, v))
	}
	return opts
}
