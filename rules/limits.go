package rules

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// MaxDocumentBytes is the largest rules document any reader takes: Parse,
// LoadFile, ReadFile and ReadDocument, and so the file watcher, FileSource,
// rules/etcdsource (through the Syncer's parse), admin's PUT /api/rules,
// `flowgate validate`, `fmt`, `rules push` and the Sentinel importer (per
// source file). A larger document is refused with ErrTooLarge and the rules
// in force stay. Bounding the input bounds what a reader can be made to
// hold: a document of 10 000 rules is well under 4 MiB.
const MaxDocumentBytes = 4 << 20

// MaxProblems is how many problems Parse (and the Sentinel importer) lists
// for one document. Past it, reading stops and one last problem says so
// and where, so that a document of a million bad rules costs no more to
// refuse than one of a hundred.
const MaxProblems = 100

// ErrTooLarge is what a reader returns (wrapped, with the size and the
// source) for a document over MaxDocumentBytes: errors.Is(err, ErrTooLarge).
var ErrTooLarge = errors.New("larger than the rules document limit")

// ErrNotRegular is what ReadFile returns (wrapped, with the path and the
// file's type) for a path that is not a regular file: a directory, a FIFO,
// a device such as /dev/zero, a socket.
var ErrNotRegular = errors.New("not a regular file")

// tooLarge says how large a document is, and the bound, read from
// MaxDocumentBytes.
func tooLarge(size string) error {
	return fmt.Errorf("document of %s bytes: %w (at most %d bytes, rules.MaxDocumentBytes)", size, ErrTooLarge, MaxDocumentBytes)
}

// ReadDocument reads r to its end, at most MaxDocumentBytes; a longer
// input is refused with ErrTooLarge after reading one byte past the bound.
func ReadDocument(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxDocumentBytes {
		return nil, tooLarge(fmt.Sprintf("more than %d", MaxDocumentBytes))
	}
	return data, nil
}

// ReadFile reads the rules document at path the way every file reader of
// this package does: only a regular file (after following symlinks), at
// most MaxDocumentBytes, and without blocking. The file is opened
// non-blocking, so a FIFO put at the path cannot hold the open; its type
// is then checked on the open descriptor (no race with a rename between a
// check and the open), and anything but a regular file is refused with
// ErrNotRegular before a byte is read.
func ReadFile(path string) ([]byte, error) {
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, fileType(fi.Mode()))}
	}
	if fi.Size() > MaxDocumentBytes {
		return nil, &fs.PathError{Op: "read", Path: path, Err: tooLarge(fmt.Sprint(fi.Size()))}
	}
	data, err := ReadDocument(f) // the size may have grown since Stat
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return data, nil
}

// fileType names a file mode's type for a refusal.
func fileType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "type " + m.Type().String()
}
