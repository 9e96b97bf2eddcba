package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/flowgate/flowgate/rules"
)

const rulesUsage = "rules push|get|diff|import  write, read or compare the rules document in etcd, or import Sentinel rules; flowgate rules -h"

var rulesCommand = command{
	name:  "rules",
	usage: rulesUsage,
	run:   runRules,
}

// Defaults of the rules subcommands' flags.
const (
	defaultEtcd = "127.0.0.1:2379"
	defaultKey  = "/flowgate/rules"
)

const rulesHelp = `usage:
  flowgate rules push [flags] FILE   validate FILE, then write it with a compare-and-swap on the
                                     revision read (exit 1 on problems, 3 if the key moved meanwhile)
  flowgate rules get [flags]         print the document in etcd; its revision and version on stderr
  flowgate rules diff [flags] FILE   show what pushing FILE would change, rule by rule
  flowgate rules import --from sentinel [--param-names 0=tenant] [--partial] FILE...
                                     convert Sentinel rule files (see flowgate rules import -h)
flags (every subcommand):
  --etcd ADDR[,ADDR]   etcd endpoints (default $FLOWGATE_ETCD, else 127.0.0.1:2379)
  --key KEY            the key holding the document (default /flowgate/rules)
  --timeout D          bound on the whole command (default 10s)
push only:
  --force              write without the compare-and-swap
  --revision N         swap only if the key is still at revision N (as printed by get)
`

// parseRulesFlags parses the flags of subcommand sub (push, get or diff)
// and checks its arguments: push and diff take one file, get none. On a
// usage error it has said so on stderr and returns a nil FlagSet and the
// exit code.
func parseRulesFlags(sub string, args []string, stderr io.Writer) (rulesFlags, *flag.FlagSet, int) {
	fs := flag.NewFlagSet("rules "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, rulesHelp) }
	var f rulesFlags
	etcdDefault := defaultEtcd
	if env := os.Getenv("FLOWGATE_ETCD"); env != "" {
		etcdDefault = env
	}
	fs.StringVar(&f.etcd, "etcd", etcdDefault, "etcd endpoints, comma-separated")
	fs.StringVar(&f.key, "key", defaultKey, "the key holding the document")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "bound on the whole command")
	if sub == "push" {
		fs.BoolVar(&f.force, "force", false, "write without the compare-and-swap")
		fs.Int64Var(&f.revision, "revision", 0, "swap only if the key is still at this revision")
	}
	if err := fs.Parse(args); err != nil {
		return f, nil, exitUsage
	}
	wantFile := sub == "push" || sub == "diff"
	switch {
	case sub != "push" && sub != "get" && sub != "diff":
		fmt.Fprintf(stderr, "flowgate rules: unknown subcommand %q\n%s", sub, rulesHelp)
		return f, nil, exitUsage
	case wantFile && fs.NArg() != 1, !wantFile && fs.NArg() != 0:
		fmt.Fprint(stderr, rulesHelp)
		return f, nil, exitUsage
	}
	return f, fs, exitOK
}

// rulesFlags are the flags the rules subcommands share.
type rulesFlags struct {
	etcd, key string
	timeout   time.Duration
	force     bool
	revision  int64
}

func runRules(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, rulesHelp)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	sub := args[0]
	if sub == "import" {
		return runImport(args[1:], stdin, stdout, stderr)
	}
	f, fs, code := parseRulesFlags(sub, args[1:], stderr)
	if fs == nil {
		return code
	}
	wantFile := sub != "get"
	// The file is checked before etcd is touched: a bad document never
	// costs a connection, and fails the same with etcd down.
	var doc *rules.Document
	var data []byte
	if wantFile {
		var code int
		if doc, data, code = readDocument(fs.Arg(0), stdin, stdout, stderr); doc == nil {
			return code
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: strings.Split(f.etcd, ","), DialTimeout: f.timeout,
		Logger: zap.NewNop(), // the command reports failures itself
	})
	if err != nil {
		fmt.Fprintf(stderr, "flowgate rules %s: etcd %s: %v\n", sub, f.etcd, err)
		return exitFailed
	}
	defer cli.Close()
	switch sub {
	case "get":
		return rulesGet(ctx, cli, f, stdout, stderr)
	case "push":
		return rulesPush(ctx, cli, f, fs.Arg(0), doc, data, stdout, stderr)
	default:
		return rulesDiff(ctx, cli, f, fs.Arg(0), doc, stdout, stderr)
	}
}

// current reads the key: its value and revision (0 when missing).
func current(ctx context.Context, cli *clientv3.Client, key string) (raw []byte, rev int64, err error) {
	resp, err := cli.Get(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, nil
	}
	return resp.Kvs[0].Value, resp.Kvs[0].ModRevision, nil
}

func rulesGet(ctx context.Context, cli *clientv3.Client, f rulesFlags, stdout, stderr io.Writer) int {
	raw, rev, err := current(ctx, cli, f.key)
	if err != nil {
		fmt.Fprintf(stderr, "flowgate rules get: etcd %s: %v\n", f.etcd, err)
		return exitFailed
	}
	if rev == 0 {
		fmt.Fprintf(stderr, "flowgate rules get: %s: not found\n", f.key)
		return exitFailed
	}
	stdout.Write(raw)
	doc, ok := parseReporting(f.key, raw, stderr)
	if !ok {
		fmt.Fprintf(stderr, "%s: revision %d: the document above is not valid; engines keep their last good rules\n", f.key, rev)
		return exitInvalid
	}
	fmt.Fprintf(stderr, "%s: revision %d, version %.12s (%d rules%s)\n", f.key, rev, doc.Version(), len(doc.Rules()), shadowNote(doc))
	return exitOK
}

// readDocument reads and validates the file to push or compare, printing
// its problems as validate does; code is the exit code when doc is nil.
func readDocument(name string, stdin io.Reader, stdout, stderr io.Writer) (doc *rules.Document, data []byte, code int) {
	data, err := readInput(name, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, nil, exitUsage
	}
	doc, ok := parseReporting(name, data, stdout)
	if !ok {
		return nil, nil, exitInvalid
	}
	return doc, data, exitOK
}

func rulesPush(ctx context.Context, cli *clientv3.Client, f rulesFlags, name string, doc *rules.Document, data []byte, stdout, stderr io.Writer) int {
	var err error
	var resp *clientv3.TxnResponse
	if f.force {
		var put *clientv3.PutResponse
		if put, err = cli.Put(ctx, f.key, string(data)); err == nil {
			fmt.Fprintf(stdout, "pushed %s to %s: revision %d, version %.12s (%d rules%s)\n",
				name, f.key, put.Header.Revision, doc.Version(), len(doc.Rules()), shadowNote(doc))
			return exitOK
		}
	} else {
		expect := f.revision
		if expect == 0 {
			if _, expect, err = current(ctx, cli, f.key); err != nil {
				fmt.Fprintf(stderr, "flowgate rules push: etcd %s: %v\n", f.etcd, err)
				return exitFailed
			}
		}
		// A missing key has ModRevision 0 in a compare, so one form covers
		// "still as read" and "still absent".
		resp, err = cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(f.key), "=", expect)).
			Then(clientv3.OpPut(f.key, string(data))).
			Else(clientv3.OpGet(f.key)).
			Commit()
		if err == nil && !resp.Succeeded {
			now := int64(0)
			if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
				now = kvs[0].ModRevision
			}
			fmt.Fprintf(stderr, "flowgate rules push: %s changed since revision %d (now %d); nothing written: "+
				"check with rules diff and push again, or use --force\n", f.key, expect, now)
			return exitFailed
		}
		if err == nil {
			fmt.Fprintf(stdout, "pushed %s to %s: revision %d, version %.12s (%d rules%s)\n",
				name, f.key, resp.Header.Revision, doc.Version(), len(doc.Rules()), shadowNote(doc))
			return exitOK
		}
	}
	fmt.Fprintf(stderr, "flowgate rules push: etcd %s: %v\n", f.etcd, err)
	return exitFailed
}

func rulesDiff(ctx context.Context, cli *clientv3.Client, f rulesFlags, name string, next *rules.Document, stdout, stderr io.Writer) int {
	raw, rev, err := current(ctx, cli, f.key)
	if err != nil {
		fmt.Fprintf(stderr, "flowgate rules diff: etcd %s: %v\n", f.etcd, err)
		return exitFailed
	}
	var cur *rules.Document
	if rev != 0 {
		// A bad document in etcd is compared as nothing: it is not in force.
		if cur, err = rules.Parse(raw); err != nil {
			fmt.Fprintf(stdout, "%s at revision %d is not a valid document; every rule of %s is new to it\n", f.key, rev, name)
		}
	}
	changes := rules.Diff(cur, next)
	fmt.Fprintf(stdout, "%s (revision %d) -> %s: %d changes\n", f.key, rev, name, len(changes))
	for _, c := range changes {
		fmt.Fprintln(stdout, c)
	}
	return exitOK
}
