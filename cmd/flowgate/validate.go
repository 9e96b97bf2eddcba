package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/flowgate/flowgate/rules"
)

const validateUsage = "validate FILE...   check rule documents; print every problem; exit 1 on any (- reads stdin)"

var validateCommand = command{
	name:  "validate",
	usage: validateUsage,
	run:   runValidate,
}

// runValidate checks every file, even after one fails, so one run shows
// everything to fix. Each problem is printed as FILE: PATH: MESSAGE.
func runValidate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.Bool("q", false, "print only problems")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: flowgate "+validateUsage)
		return exitUsage
	}
	code := exitOK
	for _, name := range fs.Args() {
		data, err := readInput(name, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			code = max(code, exitUsage)
			continue
		}
		doc, ok := parseReporting(name, data, stdout)
		if !ok {
			code = max(code, exitInvalid)
			continue
		}
		if !*quiet {
			fmt.Fprintf(stdout, "%s: ok (%d rules%s, version %.12s)\n", name, len(doc.Rules()), shadowNote(doc), doc.Version())
		}
	}
	return code
}

// parseReporting parses a document and prints each of its problems as
// NAME: PATH: MESSAGE, the form validate and rules push share.
func parseReporting(name string, data []byte, w io.Writer) (*rules.Document, bool) {
	doc, err := rules.Parse(data)
	if err != nil {
		for _, p := range rules.Problems(err) {
			fmt.Fprintf(w, "%s: %v\n", name, p)
		}
		return nil, false
	}
	return doc, true
}

// readInput reads a named file, or standard input for "-", as every rules
// reader does: at most rules.MaxDocumentBytes, and only a regular file.
func readInput(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return rules.ReadDocument(stdin)
	}
	return rules.ReadFile(name)
}

// shadowNote is ", N in shadow" when some of doc's rules are, so a document
// still trying its limits is not mistaken for one that enforces them.
func shadowNote(doc *rules.Document) string {
	n := 0
	for _, r := range doc.Rules() {
		if r.Shadow {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d in shadow", n)
}
