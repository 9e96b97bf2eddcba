// Package admin owns the admin API and the live console of a running
// flowgate engine: an http.Handler a service mounts (for example under
// /flowgate/) that answers "who is being limited right now, and why".
//
// Read endpoints (GET, JSON) report the rules in force with their version
// and source, per-resource statistics, the keys each user or ip rule
// refuses most, and one key's state. Write endpoints replace the rules and
// reset a key; they are off unless WithWriteToken or WithWriteMTLS is
// given, and then need that bearer token or a verified client certificate,
// Content-Type: application/json, and no browser mark of another site
// (Sec-Fetch-Site, Origin): a cross-site page cannot write through an
// operator's browser.
// GET / serves the console: one self-contained page that polls the API.
//
//	mux.Handle("/flowgate/", http.StripPrefix("/flowgate", admin.New(eng)))
//
// Endpoints, relative to where the handler is mounted:
//
//	GET  /                 the console page
//	GET  /api/rules        {"version", "document", "source"}
//	PUT  /api/rules        replace the rules (a rules document); write
//	GET  /api/snapshot     statistics per resource and rule
//	GET  /api/topkeys?n=10 most refused keys per user/ip rule
//	GET  /api/key?rule=ID&key=K     one key's state
//	POST /api/key/reset?rule=ID&key=K  forget one key's state; write
//	                       (or a JSON body {"rule": ID, "key": K})
//
// The package imports flow and rules; neither imports it.
package admin
