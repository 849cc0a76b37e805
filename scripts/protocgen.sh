#!/usr/bin/env bash
# Regenerates the committed Go code from proto/ with protoc and local include paths
# (no buf registry access). Plugin versions are pinned in the Makefile's proto-tools target.
set -euo pipefail
cd "$(dirname "$0")/.."
M=$(go env GOMODCACHE)
for mod in github.com/cosmos/cosmos-sdk@v0.53.8 github.com/cosmos/gogoproto@v1.7.2 \
  github.com/cosmos/cosmos-proto@v1.0.0-beta.5 github.com/grpc-ecosystem/grpc-gateway@v1.16.0; do
  [ -d "$M/$mod" ] || go mod download "${mod%@*}@${mod#*@}"
done
INCLUDES=(-I proto
  -I "$M/github.com/cosmos/cosmos-sdk@v0.53.8/proto"
  -I "$M/github.com/cosmos/gogoproto@v1.7.2"
  -I "$M/github.com/cosmos/cosmos-proto@v1.0.0-beta.5/proto"
  -I "$M/github.com/grpc-ecosystem/grpc-gateway@v1.16.0/third_party/googleapis")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# One protoc run per proto directory, as protoc-gen-gocosmos expects.
for dir in $(find proto -name '*.proto' -exec dirname {} \; | sort -u); do
  protoc "${INCLUDES[@]}" \
    --gocosmos_out=plugins=grpc,Mgoogle/protobuf/any.proto=github.com/cosmos/gogoproto/types/any:"$out" \
    --grpc-gateway_out=logtostderr=true,allow_colon_final_segments=true:"$out" \
    "$dir"/*.proto
done
cp -r "$out"/github.com/bftlog/bftlog/* ./
