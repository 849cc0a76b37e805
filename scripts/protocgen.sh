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
# The OpenAPI (Swagger 2.0) description of the x/topics REST routes that the node serves
# (x/topics/client/docs embeds it). Only the info block is set by jq: the openapiv2_swagger file
# option needs grpc-gateway's root as an include path, on which protoc-gen-gocosmos panics.
# fqn names keep definitions unambiguous; one service, so operation ids need no service prefix.
protoc "${INCLUDES[@]}" \
  --swagger_out=logtostderr=true,fqn_for_swagger_name=true,simple_operation_ids=true:"$out" \
  proto/bftlog/topics/v1/query.proto
mkdir -p x/topics/client/docs
jq --indent 2 '.info = {
    title: "bftlog x/topics REST API",
    description: "gRPC-gateway routes of the bftlog.topics.v1.Query service, generated from proto/bftlog/topics/v1/query.proto. As in proto3 JSON, 64-bit integers are strings and bytes are base64.",
    version: "v1"
  }' "$out"/bftlog/topics/v1/query.swagger.json >"$out"/openapi.json
cp "$out"/openapi.json x/topics/client/docs/openapi.json
