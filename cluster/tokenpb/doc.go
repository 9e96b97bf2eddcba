// Package tokenpb owns the wire form of flowgate's token service: the
// protobuf messages and gRPC stubs generated from token.proto, and the
// conversions between them and package flow's rules, levels and results.
//
// Regenerate with `go generate` (protoc, protoc-gen-go and
// protoc-gen-go-grpc on PATH).
package tokenpb
