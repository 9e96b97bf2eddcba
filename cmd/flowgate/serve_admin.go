package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/flowgate/flowgate/admin"
	"github.com/flowgate/flowgate/flow"
)

// mountAdmin serves the admin API and console under /flowgate/ beside
// /metrics. It shows the served rules document and its file's status;
// writes are on only with AdminTokenEnv, and a replaced document is
// written back to the rules file, from which the watcher serves it (so
// the file stays the one source of the served rules). The resources and
// their counts are the service's decisions (decisions is the token
// server's Snapshot): its engine only holds the document and decides
// nothing, and with inline rules it holds none.
func mountAdmin(mux *http.ServeMux, cf serveConfig, watched *watchedRules, decisions func() flow.Snapshot, envoy func() []admin.EnvoyDomain, log *slog.Logger) error {
	eng := flow.NewEngine() // no rules file: an empty document
	opts := []admin.Option{admin.WithLogger(log), admin.WithSnapshots(decisions), admin.WithEnvoy(envoy)}
	if watched != nil {
		eng = watched.eng
		opts = append(opts, admin.WithSource(watched.w))
	}
	if cf.AdminReadTokenEnv != "" {
		token, err := adminReadToken(cf)
		if err != nil {
			return err
		}
		opts = append(opts, admin.WithReadToken(token))
	}
	if cf.AdminTokenEnv != "" {
		token := os.Getenv(cf.AdminTokenEnv)
		if token == "" {
			return errors.New("environment variable " + cf.AdminTokenEnv + " (adminTokenEnv) is empty")
		}
		opts = append(opts, admin.WithWriteToken(token), admin.WithWriteBack(admin.WriteFile(cf.Rules)))
	}
	mux.Handle("/flowgate/", http.StripPrefix("/flowgate", admin.New(eng, opts...)))
	return nil
}

// adminReadToken is the admin read token named by cf.AdminReadTokenEnv;
// named but empty is an error, as a token nobody can send would be.
func adminReadToken(cf serveConfig) (string, error) {
	if cf.AdminReadTokenEnv == "" {
		return "", nil
	}
	token := os.Getenv(cf.AdminReadTokenEnv)
	if token == "" {
		return "", errors.New("environment variable " + cf.AdminReadTokenEnv + " (adminReadTokenEnv) is empty")
	}
	return token, nil
}

// checkAdminExposure refuses, before anything listens, to serve the admin
// reads beyond loopback without a read token (see adminExposure), and logs
// the warning of an allowed exposure.
func checkAdminExposure(cf serveConfig, log *slog.Logger) error {
	token, err := adminReadToken(cf)
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	warning, err := cf.adminExposure(token != "")
	if err != nil {
		return err
	}
	if warning != "" {
		log.Warn("flowgate serve: " + warning)
	}
	return nil
}
