package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/flow/flowhttp"
)

// newService builds the demo shop: four guarded routes (shipping calls a
// carrier that fails while sc says it is down), and /metrics beside
// them, unguarded. Every client connects from loopback, which is trusted as a
// proxy, so X-Forwarded-For names the client IP the per-IP rules count.
func newService(eng *flow.Engine, reg *prometheus.Registry, sc *scenario) (http.Handler, error) {
	proxies, err := flowhttp.ParseTrustedProxies("127.0.0.1/32", "::1/128")
	if err != nil {
		return nil, err
	}
	mux := flowhttp.NewServeMux(eng,
		flowhttp.WithUser(func(r *http.Request) string { return r.Header.Get("X-User") }),
		flowhttp.WithTrustedProxies(proxies...),
	)
	mux.HandleFunc(resProducts, func(w http.ResponseWriter, r *http.Request) {
		work(2 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `[{"id":1,"name":"teapot"},{"id":2,"name":"kettle"}]`+"\n")
	})
	mux.HandleFunc(resOrders, func(w http.ResponseWriter, r *http.Request) {
		work(5 * time.Millisecond)
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"status":"created"}`+"\n")
	})
	mux.HandleFunc(resRecs, func(w http.ResponseWriter, r *http.Request) {
		work(3 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `[{"id":7,"because":"you bought a teapot"}]`+"\n")
	})
	mux.HandleFunc(resShipping, func(w http.ResponseWriter, r *http.Request) {
		if sc.carrierDown.Load() { // the carrier times out: 502 after a while
			work(20 * time.Millisecond)
			http.Error(w, "shipping carrier unreachable", http.StatusBadGateway)
			return
		}
		work(3 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"carrier":"acme","days":2}`+"\n")
	})
	mux.ServeMux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux, nil
}

// work stands for a handler's own latency (a database call): it waits, it
// does not burn the CPU the load generator and the server share.
func work(d time.Duration) { time.Sleep(d) }

// copyRules writes the embedded rules document into a fresh temporary
// directory, the file the watcher follows and the demo later edits.
func copyRules(data []byte) (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "flowgate-demo-")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "rules.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

// editRule sets fields of the rule with the given id in the rules file, the
// way an editor saves: write a new file beside it, then rename it over the
// old one. It returns the values the fields had.
func editRule(path, id string, set map[string]any) (old map[string]any, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	list, _ := doc["rules"].([]any)
	var rule map[string]any
	for _, r := range list {
		if m, ok := r.(map[string]any); ok && m["id"] == id {
			rule = m
		}
	}
	if rule == nil {
		return nil, fmt.Errorf("%s: no rule with id %q", path, id)
	}
	old = make(map[string]any, len(set))
	for k, v := range set {
		old[k] = rule[k]
		rule[k] = v
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, errors.Join(err, os.Remove(tmp))
	}
	return old, nil
}
