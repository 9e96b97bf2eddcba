// Command walk lists the files and functions one flow.Entry and Exit runs
// through: the blocks whose count grew between two -covermode=count
// profiles of the same test, taken without the call (A) and with it (B).
// scripts/walk.sh runs it; see there.
//
//	walk A.out B.out REPO-ROOT MODULE-PATH
package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

type block struct {
	file                     string
	line0, col0, line1, col1 int
}

func read(p string) map[block]int {
	f, err := os.Open(p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "walk:", err)
		os.Exit(1)
	}
	defer f.Close()
	m := map[block]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "mode:") {
			continue
		}
		// file:l0.c0,l1.c1 nstmt count
		i := strings.LastIndex(l, ":")
		file, rest := l[:i], l[i+1:]
		fs := strings.Fields(rest)
		var b block
		b.file = file
		if _, err := fmt.Sscanf(fs[0], "%d.%d,%d.%d", &b.line0, &b.col0, &b.line1, &b.col1); err != nil || len(fs) < 3 {
			continue
		}
		c, _ := strconv.Atoi(fs[2])
		m[b] += c
	}
	return m
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: walk A.out B.out REPO-ROOT MODULE-PATH")
		os.Exit(2)
	}
	a, b := read(os.Args[1]), read(os.Args[2])
	root, mod := os.Args[3], os.Args[4] // repo root, module path
	funcs := map[string]map[string]bool{}
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	for blk, nb := range b {
		if nb <= a[blk] {
			continue
		}
		rel := strings.TrimPrefix(blk.file, mod+"/")
		path := filepath.Join(root, rel)
		if parsed[path] == nil {
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				fmt.Fprintln(os.Stderr, "walk:", err)
				os.Exit(1)
			}
			parsed[path] = f
		}
		if funcs[rel] == nil {
			funcs[rel] = map[string]bool{}
		}
		funcs[rel][funcAt(fset, parsed[path], blk.line0)] = true
	}
	var files []string
	n := 0
	for f := range funcs {
		files = append(files, f)
		n += len(funcs[f])
	}
	sort.Strings(files)
	fmt.Printf("%d files, %d functions\n", len(files), n)
	for _, f := range files {
		var fn []string
		for x := range funcs[f] {
			fn = append(fn, x)
		}
		sort.Strings(fn)
		fmt.Printf("  %s: %s\n", f, strings.Join(fn, ", "))
	}
}

// funcAt names the function of f that holds line ("Type.Method" for a
// method), "?" when none does.
func funcAt(fset *token.FileSet, f *ast.File, line int) string {
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || line < fset.Position(fd.Pos()).Line || line > fset.Position(fd.End()).Line {
			continue
		}
		if fd.Recv != nil && len(fd.Recv.List) > 0 {
			t := fd.Recv.List[0].Type
			if st, ok := t.(*ast.StarExpr); ok {
				t = st.X
			}
			if ix, ok := t.(*ast.IndexExpr); ok { // a generic type's method
				t = ix.X
			}
			if id, ok := t.(*ast.Ident); ok {
				return id.Name + "." + fd.Name.Name
			}
		}
		return fd.Name.Name
	}
	return "?"
}
