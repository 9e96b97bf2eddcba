package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

// MaxDocumentBytes bounds the body of PUT /api/rules: rules.MaxDocumentBytes,
// the bound of every rules reader.
const MaxDocumentBytes = rules.MaxDocumentBytes

// PutRulesResponse is the answer to an accepted PUT /api/rules.
type PutRulesResponse struct {
	Version string `json:"version"`
	Rules   int    `json:"rules"`
	// WrittenBack says the document went to the WithWriteBack target;
	// WriteBackError says why it did not (the rules are loaded anyway).
	WrittenBack    bool   `json:"writtenBack"`
	WriteBackError string `json:"writeBackError,omitempty"`
}

// putRules replaces the rules with the document in the body, parsed and
// validated by rules.Parse as `flowgate validate` does: a refused document
// gets 422 with every problem, in the same words, and changes nothing.
func (h *Handler) putRules(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxDocumentBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "reading the document: "+err.Error())
		return
	}
	doc, err := rules.Parse(data)
	if err != nil {
		writeProblems(w, "the rules document was refused; the rules in force are unchanged", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.eng.LoadRules(doc.Rules()); err != nil {
		writeProblems(w, "the engine refused the rules; the rules in force are unchanged", err)
		return
	}
	h.lastPut = doc
	out := PutRulesResponse{Version: doc.Version(), Rules: len(doc.Rules())}
	if h.cf.writeBack != nil {
		if err := h.cf.writeBack(r.Context(), data); err != nil {
			out.WriteBackError = err.Error()
			if h.cf.log != nil {
				h.cf.log.Error("flowgate admin: rules write-back failed", "error", err)
			}
		} else {
			out.WrittenBack = true
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func writeProblems(w http.ResponseWriter, msg string, err error) {
	var list []string
	for _, p := range rules.Problems(err) {
		list = append(list, p.Error())
	}
	writeError(w, http.StatusUnprocessableEntity, msg, list...)
}

// WriteFile returns a WithWriteBack target that replaces the file at path
// atomically (a temporary file in the same directory, renamed over it), so
// a rules.Watcher on path never reads half a document.
func WriteFile(path string) func(ctx context.Context, data []byte) error {
	return func(_ context.Context, data []byte) error {
		f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
		if err != nil {
			return err
		}
		_, werr := f.Write(data)
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			os.Remove(f.Name())
			return err
		}
		if err := os.Chmod(f.Name(), 0o644); err != nil {
			os.Remove(f.Name())
			return err
		}
		return os.Rename(f.Name(), path)
	}
}

// ResetResponse is the answer to POST /api/key/reset.
type ResetResponse struct {
	Rule string `json:"rule"`
	Key  string `json:"key"`
	// Held says the rule held state for the key (it now starts afresh).
	Held bool `json:"held"`
}

func (h *Handler) resetKey(w http.ResponseWriter, r *http.Request) {
	rule, key, ok := ruleAndKey(w, r)
	if !ok {
		return
	}
	held, err := h.eng.ResetKey(rule, key)
	if err != nil {
		writeKeyError(w, err)
		return
	}
	if h.cf.log != nil {
		h.cf.log.Info("flowgate admin: key reset", "rule", rule, "key", key, "held", held, "remote", r.RemoteAddr)
	}
	writeJSON(w, http.StatusOK, ResetResponse{Rule: rule, Key: key, Held: held})
}

// maxResetBody bounds the body of POST /api/key/reset.
const maxResetBody = 64 << 10

// resetRequest is the JSON body POST /api/key/reset may carry instead of
// its query.
type resetRequest struct {
	Rule string `json:"rule"`
	Key  string `json:"key"`
}

// ruleAndKey reads rule and key from a JSON body {"rule": ..., "key": ...}
// when there is one, else from ?rule= and ?key=. Form bodies are never
// read: a write declares JSON (see Handler.write).
func ruleAndKey(w http.ResponseWriter, r *http.Request) (rule, key string, ok bool) {
	q := r.URL.Query()
	in := resetRequest{Rule: q.Get("rule"), Key: q.Get("key")}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxResetBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "reading the body: "+err.Error())
		return "", "", false
	}
	if len(bytes.TrimSpace(body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			writeError(w, http.StatusBadRequest, "body: want {\"rule\": ID, \"key\": K}: "+err.Error())
			return "", "", false
		}
	}
	var missing []string
	if in.Rule == "" {
		missing = append(missing, "rule: required")
	}
	if in.Key == "" {
		missing = append(missing, "key: required")
	}
	if len(missing) > 0 {
		writeError(w, http.StatusBadRequest, "rule and key are required", missing...)
		return "", "", false
	}
	return in.Rule, in.Key, true
}

func writeKeyError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, flow.ErrNoRule):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, flow.ErrNotKeyed):
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}
