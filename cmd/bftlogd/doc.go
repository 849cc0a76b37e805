// Command bftlogd is the node and the CLI of a bftlog chain, as simd is the Cosmos SDK's:
// `bftlogd init|start|…` run a node (CometBFT in process, block timing and mempool settings
// for record batches written by init), `bftlogd tx|query topics …` and `tx|query poa …` are the
// modules' commands (autocli plus the hand-written produce and consume), the read commands take
// --verify to prove every answer against validator-signed headers, and `bftlogd kafka serve`
// runs the Kafka wire-protocol gateway. The root command and its wiring are in ./cmd.
package main
