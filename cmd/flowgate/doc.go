// Command flowgate owns flowgate's command line: it validates rule documents
// (for CI pipelines that ship rule files), prints them normalised, pushes
// them to etcd after validating them, and runs the cluster token service
// over Redis. Each subcommand lives in its own file.
//
//	flowgate validate [-q] FILE...   print every problem with its path; exit 1 on any, 2 if a file cannot be read
//	flowgate fmt [-w] FILE           print the document normalised (or rewrite FILE with -w)
//	flowgate serve [flags]           run the token service (gRPC) over Redis; -h lists the flags
//	flowgate rules push [flags] FILE validate FILE, then write it to etcd with a compare-and-swap
//	flowgate rules get [flags]       print the document in etcd; revision and version on stderr
//	flowgate rules diff [flags] FILE show what pushing FILE would change, rule by rule
//	flowgate rules import --from sentinel [--param-names 0=tenant] [--partial] FILE...
//	                                 convert Sentinel rule files; one exact/approx/cannot line per rule
//
// FILE "-" reads standard input. The rules subcommands take --etcd
// (endpoints, default $FLOWGATE_ETCD or 127.0.0.1:2379), --key (default
// /flowgate/rules) and --timeout; push also --force (no compare-and-swap)
// and --revision N (swap only if the key is still at N). Exit codes: 0 done,
// 1 invalid document, 2 bad command line or unreadable file, 3 etcd
// unreachable, key missing, or changed since it was read.
//
// serve puts a cluster.RedisTokenServer behind the gRPC TokenService of
// package tokenrpc. Its flags (or a JSON file given with -config, which the
// flags override) choose the Redis deployment (one server, Sentinel or
// Cluster), TLS with an optional client CA, the shared bearer token (from a
// file or an environment variable, never a flag), the rules document served
// by id and hot reloaded, and an optional /metrics listener, which also
// serves the admin API and console (package admin) under /flowgate/: the
// served document, its file's status and the console, read-only unless
// -admin-token-env names the variable holding a bearer token, with which
// PUT /flowgate/api/rules replaces the document (validated as validate
// does) and writes it back to the rules file. It listens on
// 127.0.0.1:7600 by default and refuses to listen beyond loopback unless
// callers authenticate (a token or client certificates), or
// -allow-unauthenticated is given, which logs a warning; a token beyond
// loopback needs TLS (-tls-cert, -tls-key) or -allow-cleartext-token. The
// admin reads (top keys name users and client IPs) are served beyond
// loopback only behind -admin-read-token-env or with
// -allow-open-admin-reads; -no-admin serves /metrics alone. On SIGINT or
// SIGTERM it stops accepting calls and drains those in flight for at most
// -shutdown-timeout.
package main
