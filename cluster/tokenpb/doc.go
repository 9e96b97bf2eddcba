// Package tokenpb owns the wire form of flowgate's token service: the
// protobuf messages and gRPC stubs generated from token.proto. It imports
// no flowgate package: the conversions to and from package flow's rules
// and levels live beside the client and server that use them.
//
// Regenerate with `go generate` (protoc, protoc-gen-go and
// protoc-gen-go-grpc on PATH).
package tokenpb
