// Package flowhttp owns flowgate's net/http adapter: a middleware that guards
// handlers with a flow.Engine, names resources by route pattern, resolves the
// client IP without trusting spoofable headers, and answers refusals with 429
// (503 when a circuit breaker is open, 403 when an allow or deny list refuses),
// reads call parameters (header, query, path value, cookie) for param
// rules, and sends Retry-After, the IETF
// RateLimit-Policy/RateLimit fields and an RFC 9457 problem body.
//
// Wrap each route so the middleware sees its pattern:
//
//	mw := flowhttp.Middleware(eng, flowhttp.WithUser(func(r *http.Request) string {
//		return r.Header.Get("X-User")
//	}))
//	mux.Handle("GET /orders/{id}", mw(orders)) // resource "GET /orders/{id}"
//
// or register routes on a ServeMux from NewServeMux, which does that for you.
//
// # Client IP
//
// The client is the connection's peer unless the peer is a trusted proxy
// (WithTrustedProxies). Only then are Forwarded, X-Forwarded-For or X-Real-IP
// read, from the right, skipping trusted proxies; the first untrusted address
// is the client. Anything malformed ends the walk at the last address a
// trusted proxy vouched for. See ClientIP.
//
// # Identity
//
// The IP and user the limits counted are on the request's context for the
// handler (and a BlockedHandler): IdentityFrom(r.Context()).
//
// # Headers
//
// A refusal carries Retry-After (seconds, rounded up), RateLimit-Policy:
// "rule";q=limit;w=window, RateLimit: "rule";r=remaining;t=seconds, and the
// legacy X-RateLimit-Limit, -Remaining and -Reset (delta seconds).
// WithQuotaHeaders adds the same fields to responses that passed.
package flowhttp
