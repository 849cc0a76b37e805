#!/usr/bin/env bash
# Prints the -ldflags that stamp bftlogd with its name, version and commit (the Cosmos SDK's
# version package: `bftlogd version --long`, the node_info an explorer shows). The one
# definition used by `make build`/`make install`, scripts/localnet.sh and the Go test harness
# (testutil/node):  go build -ldflags "$(scripts/ldflags.sh)" ./cmd/bftlogd
#
# Version: VERSION if set, else `git describe --tags --always --dirty` — the nearest tag
# (v1.2.0, v1.2.0-3-g5bb4eb9) or, in a clone without tags (CI clones main without any), the
# abbreviated commit (5bb4eb9); "-dirty" when the work tree has uncommitted changes. Outside a
# git checkout (a source tarball): "unknown". Commit: COMMIT if set, else the full hash of HEAD.
set -euo pipefail
cd "$(dirname "$0")/.."

# git describe --dirty refreshes the index; never take the index lock for that.
export GIT_OPTIONAL_LOCKS=0

version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || true)}
commit=${COMMIT:-$(git log -1 --format=%H 2>/dev/null || true)}

pkg=github.com/cosmos/cosmos-sdk/version
echo "-X $pkg.Name=bftlog -X $pkg.AppName=bftlogd -X $pkg.Version=${version:-unknown} -X $pkg.Commit=$commit"
