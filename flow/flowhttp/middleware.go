package flowhttp

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/flowgate/flowgate/flow"
)

// StatusClientClosedRequest is written (for logs only: nobody reads it) when
// the client went away while its request was queued. The number is nginx's.
const StatusClientClosedRequest = 499

// ErrHandlerPanicked is recorded on the permit of a handler that panicked (or
// called runtime.Goexit); the panic itself goes on unchanged.
var ErrHandlerPanicked = errors.New("flowhttp: handler panicked")

// StatusError is recorded on the permit of a handler that answered 5xx.
type StatusError int

// Error names the status code and its text.
func (e StatusError) Error() string {
	return "flowhttp: handler answered " + strconv.Itoa(int(e)) + " " + http.StatusText(int(e))
}

// Middleware guards handlers with eng (flow.Default() when nil). Each request
// enters the resource named by its route pattern with the user and client IP
// the options resolve, waits if a rule allows queueing (giving up when the
// client hangs up), and is refused with 429 and rate-limit headers
// otherwise, or 503 and Retry-After when a circuit breaker is open. The
// permit exits when the handler returns, panics included; a panic or a 5xx
// (see WithErrorStatus) is recorded as an error.
//
// r.Pattern is set by http.ServeMux only once it has routed, so wrap each
// route's handler (mux.Handle("GET /orders/{id}", mw(h))) or use ServeMux;
// a middleware around the whole mux sees no pattern and names resources
// "METHOD /path", which is one resource per distinct path.
func Middleware(eng *flow.Engine, opts ...Option) func(http.Handler) http.Handler {
	if eng == nil {
		eng = flow.Default()
	}
	cf := newConfig(opts)
	return func(next http.Handler) http.Handler {
		return &handler{eng: eng, cf: cf, next: next}
	}
}

type handler struct {
	eng  *flow.Engine
	cf   *config
	next http.Handler
}

// served is the state of one request through the middleware, allocated
// once: the status-recording writer and the context carrying the Identity.
type served struct {
	sw  statusWriter
	ctx identityCtx
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var arr [10]flow.EntryOption // context, user, ip, priority, tokens and five params without allocating
	st := &served{sw: statusWriter{ResponseWriter: w}}
	ctx := r.Context()
	opts := append(arr[:0], flow.WithContext(ctx))
	id := &st.ctx.id
	if h.cf.user != nil {
		if id.User = h.cf.user(r); id.User != "" {
			opts = append(opts, flow.WithUser(id.User))
		}
	}
	if id.IP = h.clientIP(r); id.IP != "" {
		opts = append(opts, flow.WithIP(id.IP))
	}
	if p, ok := h.priority(r); ok {
		opts = append(opts, flow.WithPriority(p))
	}
	if h.cf.params != nil {
		opts = h.cf.appendParams(opts, r)
	}
	if h.cf.estimate != nil {
		opts = append(opts, flow.WithTokens(max(h.cf.estimate(r), 1)))
	}
	res := h.resource(r)
	if !h.cf.noIdentity {
		st.ctx.Context = ctx
		r = r.WithContext(&st.ctx) // handlers read the identity with IdentityFrom
	}
	d := h.eng.Decide(res, opts...)
	if !d.Allowed {
		h.refuse(w, r, &d.Block)
		return
	}
	p := d.Permit
	if h.cf.quotaHeaders {
		if q, ok := p.Quota(); ok {
			SetQuotaHeaders(w.Header(), q)
		}
	}
	sw := &st.sw
	returned := false
	defer func() {
		// Without recover, so a panic keeps its original stack for the
		// server's log; the permit exits on the way out all the same.
		if !returned {
			p.Exit(flow.WithError(ErrHandlerPanicked))
		}
	}()
	h.next.ServeHTTP(sw, r)
	returned = true
	h.exit(p, sw)
}

// exit ends the permit of a request whose handler returned: a 5xx (see
// WithErrorStatus) recorded as an error, the actual cost settled when
// WithCost is on and the handler reported one.
func (h *handler) exit(p flow.Permit, sw *statusWriter) {
	if sw.status == 0 {
		sw.status = http.StatusOK // what net/http sends for a handler that wrote nothing
	}
	var err error
	if h.cf.isError(sw.status) {
		err = StatusError(sw.status)
	}
	if n, ok := h.cf.actualCost(sw); ok && h.cf.estimate != nil {
		p.Exit(flow.WithError(err), flow.WithActualCost(n))
		return
	}
	p.Exit(flow.WithError(err))
}

func (h *handler) resource(r *http.Request) string {
	switch {
	case h.cf.resource != nil:
		return h.cf.resource(r)
	case r.Pattern != "":
		return r.Pattern
	}
	return r.Method + " " + r.URL.Path
}

func (h *handler) clientIP(r *http.Request) string {
	if h.cf.ip != nil {
		return h.cf.ip(r)
	}
	a, src := clientAddr(r, h.cf.trusted, h.cf.proxyHeaders)
	if h.cf.v6Bits > 0 && a.Is6() {
		return netip.PrefixFrom(a, h.cf.v6Bits).Masked().String()
	}
	return addrString(a, src)
}

// addrString formats a, reusing the host part of src (the text a was read
// from) when it already is that text, the common case, so that no string is
// allocated.
func addrString(a netip.Addr, src string) string {
	if !a.IsValid() {
		return ""
	}
	var buf [64]byte
	b := a.AppendTo(buf[:0])
	if host := hostOf(src); host == string(b) {
		return host
	}
	return string(b)
}

// hostOf strips the port and brackets of "host:port" without allocating.
func hostOf(s string) string {
	if len(s) > 0 && s[0] == '[' {
		for i := 1; i < len(s); i++ {
			if s[i] == ']' {
				return s[1:i]
			}
		}
		return s
	}
	colon := -1
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			if colon >= 0 {
				return s // bare IPv6
			}
			colon = i
		}
	}
	if colon >= 0 {
		return s[:colon]
	}
	return s
}

// refuse answers a refused request. be is the Decision's, on ServeHTTP's
// stack: the default handler reads it there, and only a handler given by
// WithBlockedHandler, which may keep or change it, gets a copy on the heap,
// its Refuser (the rule's, shared by all its refusals) copied too.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, be *flow.BlockError) {
	if errors.Is(be.Err, context.Canceled) && r.Context().Err() != nil {
		w.WriteHeader(StatusClientClosedRequest)
		return
	}
	SetBlockedHeaders(w.Header(), be)
	if h.cf.customBlocked {
		by := *be.Refuser
		c := *be
		c.Refuser = &by
		h.cf.blocked(w, r, &c)
		return
	}
	WriteProblem(w, r, be)
}
