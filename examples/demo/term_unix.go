//go:build unix

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// termHeight returns the rows of the terminal out writes to, or 0.
func termHeight(out io.Writer) int {
	f, ok := out.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Row)
}
