package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/flowgate/flowgate/rules"
	"github.com/flowgate/flowgate/rules/sentinel"
)

const importHelp = `usage:
  flowgate rules import --from sentinel [--dialect auto|java|go] [--param-names 0=tenant,1=region] [--rename-http] [--partial] [--allow-empty] FILE...
    convert Sentinel rule files (Java dashboard or sentinel-golang arrays, JSON or YAML, one kind per file)
    into one flowgate document on stdout; one line per source rule on stderr: exact, approx (what
    differs) or cannot (why). Any cannot without --partial: exit 1 and nothing on stdout.
    Malformed input: exit 1 with every problem (file, array index, field). No rule to write (an
    empty array, or --partial with every rule cannot): exit 1, since an empty document, loaded,
    removes every limit; --allow-empty writes it. --rename-http turns Sentinel's web resource names
    "GET:/orders" into flowhttp's route names "GET /orders"; without it each such name is warned about.
`

// runImport is `flowgate rules import`; it never touches etcd.
func runImport(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rules import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, importHelp) }
	from := fs.String("from", "", "the source format: sentinel")
	dialect := fs.String("dialect", "auto", "auto (from the fields), java or go")
	params := fs.String("param-names", "", "names for parameter indexes, e.g. 0=tenant,1=region (default arg0, arg1...)")
	partial := fs.Bool("partial", false, "write the rules that can be carried over even when some cannot")
	renameHTTP := fs.Bool("rename-http", false, `rename Sentinel's "METHOD:/path" resources to flowhttp's "METHOD /path"`)
	allowEmpty := fs.Bool("allow-empty", false, "write a document without rules (it removes every limit when loaded)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *from != "sentinel" {
		fmt.Fprintf(stderr, "flowgate rules import: --from must be sentinel, got %q\n%s", *from, importHelp)
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, importHelp)
		return exitUsage
	}
	opts := sentinel.Options{AllowEmpty: *allowEmpty, RenameHTTP: *renameHTTP}
	var err error
	if opts.Dialect, err = sentinel.ParseDialect(*dialect); err != nil {
		fmt.Fprintf(stderr, "flowgate rules import: --dialect: %v\n", err)
		return exitUsage
	}
	if opts.ParamNames, err = parseParamNames(*params); err != nil {
		fmt.Fprintf(stderr, "flowgate rules import: --param-names: %v\n", err)
		return exitUsage
	}
	var files []sentinel.File
	for _, name := range fs.Args() {
		data, err := readInput(name, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return exitUsage
		}
		files = append(files, sentinel.File{Name: name, Data: data})
	}
	res, err := sentinel.Import(files, opts)
	if err != nil {
		for _, p := range rules.Problems(err) {
			fmt.Fprintln(stderr, p)
		}
		return exitInvalid
	}
	for _, r := range res.Reports {
		fmt.Fprintln(stderr, r)
	}
	if n := res.Cannot(); n > 0 && !*partial {
		fmt.Fprintf(stderr, "flowgate rules import: %d rule(s) cannot be carried over; nothing written (--partial writes the rest)\n", n)
		return exitInvalid
	}
	if doc := res.Document; len(doc.Rules()) == 0 && doc.Adaptive == nil && !*allowEmpty {
		fmt.Fprintln(stderr, "flowgate rules import: no rule can be carried over; an empty document, loaded, removes every limit: nothing written (--allow-empty writes it)")
		return exitInvalid
	}
	stdout.Write(res.Document.Format())
	return exitOK
}

// parseParamNames reads "0=tenant,1=region".
func parseParamNames(s string) (map[int]string, error) {
	out := map[int]string{}
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		idx, name, ok := strings.Cut(part, "=")
		i, err := strconv.Atoi(strings.TrimSpace(idx))
		name = strings.TrimSpace(name)
		if !ok || err != nil || name == "" {
			return nil, fmt.Errorf("%q: want INDEX=NAME, e.g. 0=tenant", part)
		}
		if _, dup := out[i]; dup {
			return nil, fmt.Errorf("index %d named twice", i)
		}
		out[i] = name
	}
	return out, nil
}
