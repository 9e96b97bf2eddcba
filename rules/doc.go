// Package rules owns flowgate's JSON rule documents: strict parsing with
// every problem reported at its path, the defaults, the normalised form,
// and keeping an engine's rules in step with where documents live (a file,
// an etcd key, any Source) while never giving up the last good ones.
//
// A document looks like this (every field is described in the README's
// "Rule fields" section and in schema.json, a JSON Schema editors can use
// while typing):
//
//	{
//	  "rules": [
//	    {"id": "orders-per-user", "resource": "GET /orders", "level": "user",
//	     "algorithm": "token_bucket", "limit": 20, "window": "1s", "burst": 40}
//	  ],
//	  "adaptive": {"cpuTarget": 0.8},
//	  "alerting": {"rejectionRatio": 0.3, "window": "1m"}
//	}
//
// "shadow": true on a rule, or at the top of the document for every rule,
// has rules decide and count but never refuse (flow.Rule.Shadow); see the
// README's "Shadow mode" for the push, watch, flip workflow.
//
// Parse and LoadFile read a document; Document.Rules feeds
// flow.Engine.LoadRules; Watch keeps an engine (any Loader) in step with a
// file; Sync does the same for several Sources in order of precedence
// (FileSource, and rules/etcdsource in a package of its own so that this one
// does not import etcd); Diff lists what a new document would change. The
// "adaptive" and "alerting" sections are read into their owners' types
// (cpuconfig.Config, alerting.Section), whose defaults and checks they are;
// Document.ApplySections keeps a controller and an alerter in step.
//
// Every reader is bounded: a document is at most MaxDocumentBytes, a file
// is read only when it is a regular file (ReadFile; a FIFO or a device at
// the path is refused without blocking), and Parse lists at most
// MaxProblems problems, then stops reading.
package rules
