package flowhttp

import (
	"net/http"

	"github.com/flowgate/flowgate/flow"
)

// Param says where the value of one call parameter (flow.WithParam) is read
// from in a request: build it with ParamFromHeader, ParamFromQuery,
// ParamFromPath or ParamFromCookie and give it to WithParams.
type Param struct {
	name, key string
	from      paramFrom
}

type paramFrom uint8

const (
	fromHeader paramFrom = iota
	fromQuery
	fromPath
	fromCookie
)

// DefaultParamMaxLen is the longest param value used as it is (see
// WithParamMaxLen).
const DefaultParamMaxLen = 256

// ParamFromHeader reads param name from the request header (its first value).
func ParamFromHeader(name, header string) Param {
	return Param{name: name, key: http.CanonicalHeaderKey(header), from: fromHeader}
}

// ParamFromQuery reads param name from the URL query parameter key (its first value).
func ParamFromQuery(name, key string) Param { return Param{name: name, key: key, from: fromQuery} }

// ParamFromPath reads param name from the wildcard of the ServeMux pattern
// that matched (r.PathValue(wildcard), e.g. "tenant" in "GET /t/{tenant}/orders").
func ParamFromPath(name, wildcard string) Param {
	return Param{name: name, key: wildcard, from: fromPath}
}

// ParamFromCookie reads param name from the cookie of that name.
func ParamFromCookie(name, cookie string) Param {
	return Param{name: name, key: cookie, from: fromCookie}
}

// WithParams has every request carry these call parameters, for param-level
// rules and lists. A request without a value (or with "") does not carry
// that parameter (see flow.WithParam). Default: none.
func WithParams(params ...Param) Option {
	return func(cf *config) { cf.params = append(cf.params, params...) }
}

// WithParamMaxLen cuts param values longer than n bytes to their first n
// (n < 1 keeps the default), so a client cannot make the engine hash and
// store values of any size. Default DefaultParamMaxLen. A list value longer
// than n never matches a request's.
func WithParamMaxLen(n int) Option {
	return func(cf *config) {
		if n >= 1 {
			cf.paramMax = n
		}
	}
}

// value reads p from r, "" when absent. Reading the query parses it on
// every call (as r.URL.Query does); a header, path value or cookie is
// looked up without parsing the rest.
func (p *Param) value(r *http.Request) string {
	switch p.from {
	case fromHeader:
		if vs := r.Header[p.key]; len(vs) > 0 {
			return vs[0]
		}
	case fromQuery:
		return r.URL.Query().Get(p.key)
	case fromPath:
		return r.PathValue(p.key)
	case fromCookie:
		if c, err := r.Cookie(p.key); err == nil {
			return c.Value
		}
	}
	return ""
}

// appendParams appends the request's params to opts.
func (cf *config) appendParams(opts []flow.EntryOption, r *http.Request) []flow.EntryOption {
	for i := range cf.params {
		p := &cf.params[i]
		v := p.value(r)
		if v == "" {
			continue
		}
		if len(v) > cf.paramMax {
			v = v[:cf.paramMax]
		}
		opts = append(opts, flow.WithParam(p.name, v))
	}
	return opts
}
