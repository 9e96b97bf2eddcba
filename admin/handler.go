package admin

import (
	"crypto/subtle"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

// Handler is the admin API and console of one engine. Build it with New;
// it starts no goroutine and needs no Close.
type Handler struct {
	eng  *flow.Engine
	cf   config
	mux  *http.ServeMux
	csrf *http.CrossOriginProtection

	mu      sync.Mutex
	lastPut *rules.Document // the document PUT last, shown while in force
}

// New returns the admin handler of eng (flow.Default() when nil). Mount it
// under a prefix with http.StripPrefix; see the package doc.
func New(eng *flow.Engine, opts ...Option) *Handler {
	if eng == nil {
		eng = flow.Default()
	}
	h := &Handler{eng: eng, cf: config{poll: DefaultPollInterval}, mux: http.NewServeMux()}
	for _, o := range opts {
		o(&h.cf)
	}
	h.csrf = http.NewCrossOriginProtection()
	h.mux.HandleFunc("GET /{$}", h.console)
	h.mux.HandleFunc("GET /api/rules", h.read(h.getRules))
	h.mux.HandleFunc("PUT /api/rules", h.write(h.putRules))
	h.mux.HandleFunc("GET /api/snapshot", h.read(h.getSnapshot))
	h.mux.HandleFunc("GET /api/topkeys", h.read(h.getTopKeys))
	h.mux.HandleFunc("GET /api/key", h.read(h.getKey))
	h.mux.HandleFunc("POST /api/key/reset", h.write(h.resetKey))
	h.mux.HandleFunc("GET /api/envoy", h.read(h.getEnvoy))
	return h
}

// WritesEnabled reports whether a write credential was configured.
func (h *Handler) WritesEnabled() bool { return h.cf.writeTok != "" || h.cf.mtls }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "" {
		// Mounted with StripPrefix("/flowgate") and asked for "/flowgate":
		// the page's relative API links need the trailing slash.
		p, _, _ := strings.Cut(r.RequestURI, "?")
		http.Redirect(w, r, p[strings.LastIndexByte(p, '/')+1:]+"/", http.StatusMovedPermanently)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

// read guards a read endpoint: open, unless WithReadToken.
func (h *Handler) read(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.cf.readTok != "" && !bearer(r, h.cf.readTok) && !h.writer(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="flowgate"`)
			writeError(w, http.StatusUnauthorized, "a bearer token is required to read")
			return
		}
		next(w, r)
	}
}

// write guards a write endpoint: 403 when writes are off or the request
// comes from another site, 401 without a valid credential, 415 unless it
// declares a JSON body (Content-Type: application/json, even when empty).
//
// A browser attaches a client certificate (and, on some setups, other
// ambient credentials) to any page's request, and a plain HTML form may
// POST across sites without asking the server first. Such a request says
// where it comes from (Sec-Fetch-Site, or an Origin unlike the Host), and
// it cannot declare a JSON body without the CORS preflight we never grant:
// either refusal alone stops it.
func (h *Handler) write(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !h.WritesEnabled() {
			writeError(w, http.StatusForbidden, "writes are disabled (enable them with admin.WithWriteToken or admin.WithWriteMTLS)")
			return
		}
		if err := h.csrf.Check(r); err != nil {
			h.logRefusal(r)
			writeError(w, http.StatusForbidden, "cross-site write refused: the request's Sec-Fetch-Site or Origin says another site sent it")
			return
		}
		if !h.writer(r) {
			h.logRefusal(r)
			w.Header().Set("WWW-Authenticate", `Bearer realm="flowgate"`)
			writeError(w, http.StatusUnauthorized, "a valid bearer token or client certificate is required to write")
			return
		}
		if !jsonBody(r) {
			writeError(w, http.StatusUnsupportedMediaType, "writes take Content-Type: application/json")
			return
		}
		next(w, r)
	}
}

// jsonBody reports whether r declares an application/json body.
func jsonBody(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// writer reports whether r carries a write credential.
func (h *Handler) writer(r *http.Request) bool {
	if h.cf.writeTok != "" && bearer(r, h.cf.writeTok) {
		return true
	}
	if h.cf.mtls && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		leaf := r.TLS.VerifiedChains[0][0]
		return h.cf.mtlsNames == nil || h.cf.mtlsNames[leaf.Subject.CommonName]
	}
	return false
}

func (h *Handler) logRefusal(r *http.Request) {
	if h.cf.log != nil {
		h.cf.log.Warn("flowgate admin: write refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
	}
}

// bearer reports whether r's Authorization is "Bearer token", comparing in
// constant time so the token cannot be guessed byte by byte.
func bearer(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

// apiError is the body of every error answer.
type apiError struct {
	Error    string   `json:"error"`
	Problems []string `json:"problems,omitempty"`
}

func writeError(w http.ResponseWriter, status int, msg string, problems ...string) {
	writeJSON(w, status, apiError{Error: msg, Problems: problems})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to tell
}
