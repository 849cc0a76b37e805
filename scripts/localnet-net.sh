#!/usr/bin/env bash
# make localnet VALIDATORS=N (N > 1): N validators on this machine from `bftlogd testnet` in
# ./.localnet (fresh each run; node i's ports are the defaults plus 10×i), a demo topic in
# genesis, and a Kafka gateway on 127.0.0.1:9092 signing as val0. Prints how to reach them;
# Ctrl-C stops them all. localnet.sh builds the binary and runs this.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-./build/bftlogd}
DIR=${LOCALNET_HOME:-./.localnet}
CHAIN_ID=${CHAIN_ID:-bftlog-local}
N=${VALIDATORS:?}

rm -rf "$DIR"
"$BIN" testnet --validators "$N" --output-dir "$DIR" --chain-id "$CHAIN_ID"

# The same demo topic and governance periods as the one-validator localnet, written into every
# node's copy of the collected genesis alike (no gentx depends on them).
VAL0=$("$BIN" keys show val0 -a --keyring-backend test --home "$DIR/node0")
for home in "$DIR"/node*; do
  GEN="$home/config/genesis.json"
  jq --arg owner "$VAL0" '
    .app_state.topics.topics = [{name: "demo", partitions: 3, owner: $owner, created_height: "0",
        config: {max_record_bytes: "0", retention_ms: "-1", retention_bytes: "-1",
                 producer_policy: "PRODUCER_POLICY_ANYONE", allowed_producers: []}}]
    | .app_state.topics.partitions = [range(0;3) | {topic: "demo", partition: ., high_watermark: "0",
        log_start_offset: "0", record_count: "0", byte_count: "0"}]
    | .app_state.gov.params.voting_period = "60s"
    | .app_state.gov.params.expedited_voting_period = "30s"' "$GEN" > "$GEN.tmp" && mv "$GEN.tmp" "$GEN"
done
sha256sum "$DIR"/node*/config/genesis.json | awk '{print $1}' | uniq | wc -l | grep -qx 1
"$BIN" genesis validate "$DIR/node0/config/genesis.json" --home "$DIR/node0" >/dev/null

pids=()
stop() {
  trap - INT TERM EXIT
  stopping=1
  echo; echo "Stopping the gateway and $N validators..."
  kill -INT "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
}
trap stop INT TERM EXIT
for ((i = 0; i < N; i++)); do
  "$BIN" start --home "$DIR/node$i" >"$DIR/node$i.log" 2>&1 &
  pids+=($!)
done
# The gateway waits for the chain's first blocks: it reads chain state at start.
until "$BIN" status --home "$DIR/node0" 2>/dev/null | jq -e '.sync_info.latest_block_height | tonumber > 1' >/dev/null; do
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || { echo "a validator exited; see $DIR/node*.log" >&2; exit 1; }; done
  sleep 1
done
"$BIN" kafka serve --listen 127.0.0.1:9092 --from val0 --home "$DIR/node0" >"$DIR/gateway.log" 2>&1 &
pids+=($!)

cat <<MSG

bftlog local chain "$CHAIN_ID": $N validators in $DIR (node0 ... node$((N - 1))), logs in $DIR/node<i>.log.
Node i: RPC 127.0.0.1:26657+10i, REST 127.0.0.1:1317+10i, gRPC 127.0.0.1:9090+10i, data plane 127.0.0.1:1318+10i
(node0: RPC 26657, REST 1317; node1: RPC 26667, REST 1327; ...). Keys val<i> (test keyring) in node<i>'s home.
Kafka gateway 127.0.0.1:9092 (signing as val0; log $DIR/gateway.log). Topic "demo" has 3 partitions.

From a second terminal:
  $BIN tx topics produce demo 'hello' 'world' --from val0 --home $DIR/node0
  $BIN query topics consume demo --from-beginning --print-partition --print-offset --home $DIR/node$((N - 1))
  printf 'k1:hello\nk2:world\n' | kcat -b 127.0.0.1:9092 -P -t demo -K :
  kcat -b 127.0.0.1:9092 -C -t demo -o beginning -e
  curl -s 127.0.0.1:1317/bftlog/topics/v1/topics/demo/partitions/0/records

Ctrl-C stops them all.
MSG
wait -n "${pids[@]}" || true
sleep 0.5 # a Ctrl-C reaches the processes and this script at once: let its trap run first
[ -n "${stopping:-}" ] || echo "a process exited; see $DIR/*.log" >&2
