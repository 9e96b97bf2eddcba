package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// isTerminal reports whether out is a terminal. A character device is not
// enough (/dev/null is one): x/term asks the terminal driver itself.
func isTerminal(out io.Writer) bool {
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// termSize returns the columns and rows of the terminal out writes to, or
// 0, 0 when out is not a terminal or its size is unknown.
func termSize(out io.Writer) (width, height int) {
	f, ok := out.(*os.File)
	if !ok {
		return 0, 0
	}
	w, h, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0, 0
	}
	return w, h
}
