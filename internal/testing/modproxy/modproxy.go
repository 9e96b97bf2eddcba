// Package modproxy owns writing a module proxy into a directory, so that a
// test can serve modules of this repository to the go command through
// GOPROXY=file://DIR exactly as a published release would be served: by
// path and version, from a zip, never from the repository by path.
//
// The layout is the GOPROXY protocol's (go help goproxy): for each module,
// DIR/<escaped path>/@v/list, and <version>.info, .mod and .zip. A zip holds
// the module's files under "<path>@<version>/", leaving out what the go
// command leaves out of a module: nested modules (a directory with its own
// go.mod), version-control and other hidden directories, and anything that
// is not a regular file.
package modproxy

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Module is one module version to serve.
type Module struct {
	Path    string    // module path, as its go.mod names it
	Version string    // canonical semantic version, "v0.1.0"
	Dir     string    // the directory holding its go.mod
	Time    time.Time // the version's time in .info; zero means the Unix epoch
}

// Write writes the proxy files of every module into dir. Versions of one
// path are listed together. Nothing is fetched; a module whose go.mod
// names another path is an error.
func Write(dir string, mods ...Module) error {
	lists := map[string][]string{}
	for _, m := range mods {
		if err := writeModule(dir, m); err != nil {
			return fmt.Errorf("modproxy: %s@%s: %w", m.Path, m.Version, err)
		}
		lists[m.Path] = append(lists[m.Path], m.Version)
	}
	for p, versions := range lists {
		name := filepath.Join(dir, filepath.FromSlash(EscapePath(p)), "@v", "list")
		if err := os.WriteFile(name, []byte(strings.Join(versions, "\n")+"\n"), 0o644); err != nil {
			return fmt.Errorf("modproxy: %w", err)
		}
	}
	return nil
}

func writeModule(dir string, m Module) error {
	if !strings.HasPrefix(m.Version, "v") || strings.ContainsAny(m.Version, "/ ") {
		return fmt.Errorf("version %q is not a semantic version", m.Version)
	}
	gomod, err := os.ReadFile(filepath.Join(m.Dir, "go.mod"))
	if err != nil {
		return err
	}
	if got := ModulePath(gomod); got != m.Path {
		return fmt.Errorf("%s/go.mod names module %q", m.Dir, got)
	}
	vdir := filepath.Join(dir, filepath.FromSlash(EscapePath(m.Path)), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	at := m.Time
	if at.IsZero() {
		at = time.Unix(0, 0)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, at.UTC()})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, m.Version+".info"), info, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, m.Version+".mod"), gomod, 0o644); err != nil {
		return err
	}
	return writeZip(filepath.Join(vdir, m.Version+".zip"), m)
}

// writeZip writes the module's files under the prefix "path@version/".
func writeZip(name string, m Module) (err error) {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	zw := zip.NewWriter(f)
	files, err := moduleFiles(m.Dir)
	if err != nil {
		return err
	}
	for _, rel := range files {
		if err := addFile(zw, m.Path+"@"+m.Version+"/"+rel, filepath.Join(m.Dir, filepath.FromSlash(rel))); err != nil {
			return err
		}
	}
	return zw.Close()
}

func addFile(zw *zip.Writer, name, src string) error {
	w, err := zw.Create(name)
	if err != nil {
		return err
	}
	r, err := os.Open(src)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(w, r)
	return err
}

// moduleFiles lists the regular files of the module rooted at root, slash
// separated and relative to it, without nested modules and hidden
// directories.
func moduleFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == root {
				return nil
			}
			if strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	return files, err
}

// ModulePath returns the path a go.mod's module directive names, or "".
func ModulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		line, _, _ = strings.Cut(line, "//")
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// Required returns the version at which a go.mod requires the module path
// p, or "" when it does not require it. It reads both the one-line form
// (require p v) and the block form.
func Required(gomod []byte, p string) string {
	inBlock := false
	for _, line := range strings.Split(string(gomod), "\n") {
		line, _, _ = strings.Cut(line, "//")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 2 && fields[0] == "require" && fields[1] == "(":
			inBlock = true
			continue
		case inBlock && len(fields) == 1 && fields[0] == ")":
			inBlock = false
			continue
		case len(fields) == 3 && fields[0] == "require":
			fields = fields[1:]
		case !inBlock:
			continue
		}
		if len(fields) == 2 && fields[0] == p {
			return fields[1]
		}
	}
	return ""
}

// HasReplace reports whether a go.mod has a replace directive.
func HasReplace(gomod []byte) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		line, _, _ = strings.Cut(line, "//")
		if f := strings.Fields(line); len(f) > 0 && f[0] == "replace" {
			return true
		}
	}
	return false
}

// EscapePath is the proxy protocol's case encoding of a module path: each
// upper-case letter becomes '!' and its lower case, so that paths differing
// in case stay apart on case-insensitive file systems.
func EscapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return path.Clean(b.String())
}
