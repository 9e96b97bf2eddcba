//go:build !unix

package rules

import (
	"fmt"
	"io/fs"
	"os"
)

// openNonBlocking opens path for reading. Without O_NONBLOCK, it refuses a
// path that is not a regular file before opening it (ReadFile checks the
// open file again).
func openNonBlocking(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, fileType(fi.Mode()))}
	}
	return os.Open(path)
}
