// Command flowgate owns the command line for flowgate rule documents: it
// validates them (for CI pipelines that ship rule files) and prints them
// normalised. Each subcommand lives in its own file.
//
//	flowgate validate [-q] FILE...   print every problem with its path; exit 1 on any, 2 if a file cannot be read
//	flowgate fmt [-w] FILE           print the document normalised (or rewrite FILE with -w)
//
// FILE "-" reads standard input.
package main
