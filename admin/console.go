package admin

import (
	_ "embed"
	"net/http"
	"strconv"
	"strings"
)

// consoleHTML is the console: one page, its CSS and script inline, no
// external asset and no build step. It reads the API with fetch, relative
// to where it is served, so it works under any mount prefix.
//
//go:embed console.html
var consoleHTML string

func (h *Handler) console(w http.ResponseWriter, r *http.Request) {
	page := strings.Replace(consoleHTML, `content="1000"`, `content="`+strconv.FormatInt(h.cf.poll.Milliseconds(), 10)+`"`, 1)
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	// Everything is inline; nothing may be fetched from elsewhere, and the
	// page may not be framed.
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write([]byte(page))
}
