// Package types holds what x/topics shares with the clients, gateways and verifiers around it,
// and nothing that touches state (x/topics/keeper does):
//
//   - the messages, state objects, events and queries generated from proto/bftlog/topics/v1;
//   - the store keys and their encodings, which a verifying client rebuilds to check a proof
//     against the app hash, so they live here rather than in the keeper;
//   - the registered errors and their codes (clients match them with errors.Is, never text);
//   - the params, their defaults and the bounds no governance vote may cross;
//   - the stored batch (RecordBatch) and the producer's records, converted to and from
//     x/topics/kbatch, the Kafka record batch codec (which imports nothing of the module);
//   - what the chain and its clients must compute alike: the assignors of native groups,
//     the bounds on Kafka-protocol group messages, Kafka's murmur2 key partitioner.
package types
