package main

import (
	"fmt"
	"io"
	"os"
)

// command is one subcommand; each lives in its own file.
type command struct {
	name  string
	usage string // one line, after "flowgate "
	run   func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order help shows them.
var commands = []command{validateCommand, fmtCommand, serveCommand, rulesCommand}

// Exit codes.
const (
	exitOK      = 0
	exitInvalid = 1 // a document has problems
	exitUsage   = 2 // bad command line, or a file that cannot be read
	exitFailed  = 3 // etcd unreachable, a key missing, or changed since it was read
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: tests call it with their own streams.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "flowgate: unknown command %q\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  flowgate %s\n", c.usage)
	}
}
