package sentinel

import (
	"fmt"
	"strings"

	"github.com/flowgate/flowgate/flow"
)

// httpMethods are the methods a Sentinel web adapter prefixes a resource
// with ("GET:/orders"), as net/http spells them.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE"}

// httpRoute splits Sentinel's "METHOD:/path" into flowhttp's
// "METHOD /path"; ok is false for any other name.
func httpRoute(name string) (string, bool) {
	method, path, ok := strings.Cut(name, ":")
	if !ok || !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t") {
		return "", false
	}
	for _, m := range httpMethods {
		if method == m {
			return method + " " + path, true
		}
	}
	return "", false
}

// rename applies Options.RenameHTTP to the rules written for rep and
// warns about every name left that flowhttp would not give a route.
func rename(rep *Report, rs []flow.Rule, opts Options) {
	if to, ok := httpRoute(rep.Resource); ok && opts.RenameHTTP {
		rep.Renamed = to
	}
	for i := range rs {
		for _, name := range []*string{&rs[i].Resource, &rs[i].RefResource} {
			if to, ok := httpRoute(*name); ok && opts.RenameHTTP {
				*name = to
			}
		}
	}
	seen := map[string]bool{}
	for _, name := range []string{rep.Resource, refOf(rs)} {
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		if w := routeWarning(name, opts); w != "" {
			rep.Warnings = append(rep.Warnings, w)
		}
	}
}

func refOf(rs []flow.Rule) string {
	if len(rs) > 0 {
		return rs[0].RefResource
	}
	return ""
}

// routeWarning says why a name that looks like an HTTP route will not
// match flowhttp's, which names a request by its ServeMux pattern,
// "METHOD /path" (or "/path" for a pattern without a method).
func routeWarning(name string, opts Options) string {
	if to, ok := httpRoute(name); ok && !opts.RenameHTTP {
		return fmt.Sprintf("%q looks like a Sentinel web resource; flowhttp names that route %q (--rename-http renames it)", name, to)
	}
	if strings.HasPrefix(name, "/") {
		return fmt.Sprintf("%q is an HTTP path: flowhttp names a request by its ServeMux pattern, so it matches only a route registered as %q, without a method (one with a method is %q)", name, name, "GET "+name)
	}
	return ""
}
