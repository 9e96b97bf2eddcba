package main

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// The live table redraws in place by moving the cursor up as many lines as
// it wrote; a line the terminal wraps takes two rows and the redraw drifts.
// So every line is made to fit the terminal's width: long prose (events, the
// intro) wraps at spaces, the table's fixed rows are clipped.

// visibleLen is the width of s on a terminal: runes, less ANSI CSI escape
// sequences (ESC [ ... final byte), which take no room.
func visibleLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			i += 2
			for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
				i++
			}
			i++ // the final byte
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return n
}

// clipWidth cuts s to width visible columns, ending in "…" when it cut;
// escape sequences are kept whole. width <= 0 leaves s as it is.
func clipWidth(s string, width int) string {
	if width <= 0 || visibleLen(s) <= width {
		return s
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			j = min(j+1, len(s))
			b.WriteString(s[i:j])
			i = j
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if n == width-1 {
			b.WriteString("…")
			if strings.Contains(s, "\x1b[") {
				b.WriteString("\x1b[0m") // a cut colour must not run on
			}
			return b.String()
		}
		b.WriteRune(r)
		n++
		i += size
	}
	return b.String()
}

// wrap breaks s (no escape codes) at spaces into lines of at most width
// columns, continuation lines indented by indent spaces; a word longer
// than a line is clipped. width <= 0 returns s whole.
func wrap(s string, width, indent int) []string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return []string{s}
	}
	indent = min(indent, width/2)
	lead := len(s) - len(strings.TrimLeft(s, " ")) // the first line keeps its indent
	var lines []string
	cur, curLen, empty := strings.Repeat(" ", lead), lead, true
	for _, word := range strings.Fields(s) {
		wl := utf8.RuneCountInString(word)
		if !empty && curLen+1+wl > width {
			lines = append(lines, cur)
			cur, curLen, empty = strings.Repeat(" ", indent), indent, true
		}
		if !empty {
			cur += " "
			curLen++
		}
		cur += word
		curLen += wl
		empty = false
		if curLen > width {
			cur, curLen = clipWidth(cur, width), width
		}
	}
	return append(lines, cur)
}

// fitWriter wraps each line written through it to width columns. The
// intro above the table goes through one.
type fitWriter struct {
	out   io.Writer
	width int
	buf   []byte
}

func (f *fitWriter) Write(p []byte) (int, error) {
	f.buf = append(f.buf, p...)
	for {
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(f.buf[:i])
		f.buf = f.buf[i+1:]
		indent := len(line) - len(strings.TrimLeft(line, " ")) + 4
		if _, err := io.WriteString(f.out, strings.Join(wrap(line, f.width, indent), "\n")+"\n"); err != nil {
			return len(p), err
		}
	}
}
