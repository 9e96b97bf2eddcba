package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/flowgate/flowgate/rules"
)

const fmtUsage = "fmt [-w] FILE      print the document normalised: defaults filled, stable field order (-w: rewrite FILE)"

var fmtCommand = command{
	name:  "fmt",
	usage: fmtUsage,
	run:   runFmt,
}

// runFmt prints the normalised form of one document. A document with
// problems is not printed (nor rewritten): its problems are, on stderr.
func runFmt(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fmt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	write := fs.Bool("w", false, "write the result back to FILE instead of printing it")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 1 || (*write && fs.Arg(0) == "-") {
		fmt.Fprintln(stderr, "usage: flowgate "+fmtUsage)
		return exitUsage
	}
	name := fs.Arg(0)
	data, err := readInput(name, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitUsage
	}
	doc, err := rules.Parse(data)
	if err != nil {
		for _, p := range rules.Problems(err) {
			fmt.Fprintf(stderr, "%s: %v\n", name, p)
		}
		return exitInvalid
	}
	out := doc.Format()
	if !*write {
		stdout.Write(out)
		return exitOK
	}
	if bytes.Equal(out, data) {
		return exitOK
	}
	if err := writeAtomic(name, out); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitUsage
	}
	return exitOK
}

// writeAtomic replaces name by renaming a finished temporary file over it,
// so a watcher never reads a half-written document.
func writeAtomic(name string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(name); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
