#!/usr/bin/env bash
# Builds bftlogd, initialises a single-validator chain in ./.localnet (fresh each run) with a
# demo topic in genesis, prints how to use it, and runs the node in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-./build/bftlogd}
HOME_DIR=${LOCALNET_HOME:-./.localnet}
CHAIN_ID=${CHAIN_ID:-bftlog-local}
KR=(--keyring-backend test --home "$HOME_DIR")

command -v jq >/dev/null || { echo "localnet needs jq (apt-get install jq)" >&2; exit 1; }
go build -ldflags "$(scripts/ldflags.sh)" -o "$BIN" ./cmd/bftlogd
# VALIDATORS=N (make localnet VALIDATORS=4): N validators and a Kafka gateway instead.
if [ "${VALIDATORS:-1}" -gt 1 ]; then
  BIN=$BIN exec scripts/localnet-net.sh
fi

rm -rf "$HOME_DIR"
"$BIN" init localnet --chain-id "$CHAIN_ID" --home "$HOME_DIR" >/dev/null 2>&1
"$BIN" config set client chain-id "$CHAIN_ID" --home "$HOME_DIR"
"$BIN" config set client keyring-backend test --home "$HOME_DIR"
# Public test keys (scripts/test-keys.txt) so that the proposal examples name real accounts.
for who in alice bob carol; do
  grep "^$who " scripts/test-keys.txt | cut -d' ' -f2- | "$BIN" keys add "$who" --recover "${KR[@]}" >/dev/null 2>&1
  "$BIN" genesis add-genesis-account "$who" 1000000000000stake "${KR[@]}"
done
"$BIN" genesis gentx alice 100000000stake --chain-id "$CHAIN_ID" "${KR[@]}" >/dev/null 2>&1
"$BIN" genesis collect-gentxs --home "$HOME_DIR" >/dev/null 2>&1

# `bftlogd init` wrote block max_gas and the default x/topics params (min_gas_price, deposits,
# max_tx_gas; x/topics/README.md "Fees and deposits"): every tx pays gas x min_gas_price, filled in by bftlogd.
# A demo topic "demo" with 3 partitions owned by alice, written straight into genesis (no deposit:
# the topics module account holds exactly the deposits in genesis, here none).
ALICE=$("$BIN" keys show alice -a "${KR[@]}")
GEN="$HOME_DIR/config/genesis.json"
jq --arg owner "$ALICE" '
  .app_state.topics.topics = [{name: "demo", partitions: 3, owner: $owner, created_height: "0",
      config: {max_record_bytes: "0", retention_ms: "-1", retention_bytes: "-1",
               producer_policy: "PRODUCER_POLICY_ANYONE", allowed_producers: []}}]
  | .app_state.topics.partitions = [range(0;3) | {topic: "demo", partition: ., high_watermark: "0",
      log_start_offset: "0", record_count: "0", byte_count: "0"}]
  | .app_state.gov.params.voting_period = "60s"
  | .app_state.gov.params.expedited_voting_period = "30s"' "$GEN" > "$GEN.tmp" && mv "$GEN.tmp" "$GEN"
"$BIN" genesis validate "$GEN" --home "$HOME_DIR" >/dev/null

# The REST API and gRPC are on for local use; CORS lets a local explorer read them.
sed -i 's/^enable = false/enable = true/; s/^enabled-unsafe-cors = false/enabled-unsafe-cors = true/' "$HOME_DIR/config/app.toml"
sed -i 's/^cors_allowed_origins = \[\]/cors_allowed_origins = ["*"]/' "$HOME_DIR/config/config.toml"

cat <<MSG

bftlog local chain "$CHAIN_ID" in $HOME_DIR — RPC 127.0.0.1:26657, REST 127.0.0.1:1317, gRPC 127.0.0.1:9090.
Keys alice (the validator), bob and carol (keyring-backend test, scripts/test-keys.txt). Topic "demo" has 3 partitions.
Governance voting period: 60s (proposals in scripts/proposals/, see docs/governance.md).
Fees: gas x min_gas_price ($(jq -r '.app_state.topics.params.min_gas_price | .amount + .denom' "$GEN")), paid automatically by bftlogd; block max_gas $(jq -r .consensus.params.block.max_gas "$GEN").

From a second terminal:
  $BIN tx topics produce demo 'hello' 'world' --from alice --home $HOME_DIR
  seq 1 100 | awk '{print "key-" \$1 ":value-" \$1}' | $BIN tx topics produce demo --key-separator : --header source=cli --from alice --home $HOME_DIR
  $BIN query topics consume demo --from-beginning --print-key --print-partition --print-offset --home $HOME_DIR
  $BIN query topics partitions demo --home $HOME_DIR
  curl -s 127.0.0.1:1317/bftlog/topics/v1/topics/demo/partitions/0/records

In a browser: console http://127.0.0.1:1317/console/ · metrics http://127.0.0.1:26660/metrics
REST description http://127.0.0.1:1317/bftlog/topics/v1/openapi.json · ping.pub: scripts/explorer/bftlog-local.json

Starting the node (Ctrl-C stops it)...
MSG
exec "$BIN" start --home "$HOME_DIR"
