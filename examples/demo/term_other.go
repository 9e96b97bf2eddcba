//go:build !unix

package main

import "io"

// termHeight returns 0 (unknown): the table is drawn whole.
func termHeight(io.Writer) int { return 0 }
