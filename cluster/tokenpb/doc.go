// Package tokenpb owns the wire form of flowgate's token service: the
// protobuf messages and gRPC stubs generated from token.proto. It imports
// no flowgate package: the conversions to and from package flow's rules
// and levels live beside the client and server that use them.
//
// Regenerate with `make proto` (scripts/gen-proto.sh), which runs
// `go generate` here with the generator versions named in the generated
// files' headers. Changes to token.proto add fields with new numbers only,
// so older clients and servers keep working.
package tokenpb
