#!/bin/sh
# Regenerates cluster/tokenpb (token.pb.go, token_grpc.pb.go) from
# token.proto with the generator versions that made the checked-in code, so
# a change to the .proto shows up as a diff of the fields it adds and
# nothing else. Not part of `make test`: the generated files are committed.
#
#   sh scripts/gen-proto.sh      # or: make proto
#
# protoc 3.21.12 is Debian's protobuf-compiler (installed with apt-get when
# missing and we are root); protoc-gen-go and protoc-gen-go-grpc are
# installed at their pinned versions into a temporary GOBIN, never into
# go.mod.
set -eu

GO=${GO:-go}
PROTOC_VERSION=3.21.12
GEN_GO=google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
GEN_GRPC=google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

root=$(cd "$(dirname "$0")/.." && pwd)

if ! command -v protoc >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get install -y protobuf-compiler >/dev/null
	else
		echo "gen-proto: protoc not found (apt-get install protobuf-compiler)" >&2
		exit 1
	fi
fi
have=$(protoc --version | awk '{print $2}')
if [ "$have" != "$PROTOC_VERSION" ]; then
	echo "gen-proto: protoc $have, want $PROTOC_VERSION (the version in the generated files' headers)" >&2
	exit 1
fi

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
# Outside the module, so go install does not touch go.mod.
(cd "$bin" && GOBIN="$bin" "$GO" install "$GEN_GO" && GOBIN="$bin" "$GO" install "$GEN_GRPC")

cd "$root/cluster/tokenpb"
PATH="$bin:$PATH" "$GO" generate .
echo "gen-proto: regenerated cluster/tokenpb from token.proto"
