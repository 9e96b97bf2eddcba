package flowhttp

import "context"

// Identity is who the middleware decided a request comes from: the values
// it passed to flow.WithIP and flow.WithUser, so a handler logs, audits or
// greets the same client the limits counted.
type Identity struct {
	// IP is the client address after the trusted-proxy walk (ClientIP), or
	// its /n prefix with WithIPv6Prefix, or what WithIP returned; "" when
	// none was found.
	IP string
	// User is what the WithUser function returned; "" without WithUser.
	User string
}

// IdentityFrom returns the Identity the middleware resolved for the request
// whose context ctx is (r.Context() in a handler behind Middleware or
// ServeMux, and in a BlockedHandler); ok is false for a context that did not
// come through the middleware.
func IdentityFrom(ctx context.Context) (id Identity, ok bool) {
	p, ok := ctx.Value(identityKey{}).(*Identity)
	if !ok {
		return Identity{}, false
	}
	return *p, true
}

type identityKey struct{}

// identityCtx is the request's context carrying its Identity. It is a
// field of the per-request state the middleware allocates anyway (with the
// status-recording writer), so carrying the identity adds no allocation of
// its own; only the request copy r.WithContext makes does.
type identityCtx struct {
	context.Context
	id Identity
}

func (c *identityCtx) Value(key any) any {
	if key == (identityKey{}) {
		return &c.id
	}
	return c.Context.Value(key)
}
