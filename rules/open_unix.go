//go:build unix

package rules

import (
	"os"
	"syscall"
)

// openNonBlocking opens path for reading with O_NONBLOCK: opening a FIFO
// then returns at once instead of waiting for a writer. ReadFile refuses
// anything but a regular file before reading, and O_NONBLOCK changes
// nothing for reads of a regular file.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
