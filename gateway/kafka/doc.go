// Package kafka is a Kafka wire-protocol gateway in front of bftlog: existing Kafka clients
// connect to it as to a broker, and it turns their requests into x/topics queries and signed
// transactions (franz-go's kmsg does every encoding). An organisation runs its own gateway near
// its clients, with its own key; every append is still ordered by consensus.
//
// Every Kafka API the gateway answers, by key: the file that serves it (one per API family, as
// Kafka's protocol groups them), the function server.go's dispatch calls, and what it does on
// chain. TestDocMapsEveryAPIKey keeps this table true against versions.go and the dispatch.
//
//	key  request                       file                handler                       chain
//	0    Produce                       producer.go         produce                       MsgProduce, one transaction per lane of partitions
//	1    Fetch                         fetch.go            fetch                         Fetch and Partitions queries, waiting on new blocks
//	2    ListOffsets                   list_offsets.go     listOffsets                   ListOffsets query
//	3    Metadata                      discovery.go        metadata                      Topic and Topics queries
//	8    OffsetCommit                  groups.go           offsetCommit                  MsgCommitOffsets, answered once admitted
//	9    OffsetFetch                   offset_fetch.go     offsetFetch                   GroupOffsets query, with this gateway's admitted commits
//	10   FindCoordinator               discovery.go        findCoordinator               none: this gateway coordinates every group
//	11   JoinGroup                     groups.go           joinGroup                     MsgKafkaJoinGroup
//	12   Heartbeat                     groups.go           heartbeat                     KafkaGroup query; MsgKafkaHeartbeat per group and second
//	13   LeaveGroup                    groups.go           leaveGroup                    MsgKafkaLeaveGroup
//	14   SyncGroup                     groups.go           syncGroup                     MsgKafkaSyncGroup (the leader), KafkaGroup query
//	15   DescribeGroups                admin_groups.go     describeGroups                Group and KafkaGroup queries
//	16   ListGroups                    admin_groups.go     listGroups                    Groups query
//	17   SASLHandshake                 sasl.go             saslHandshake                 none: the gateway's --users
//	18   ApiVersions                   versions.go         apiVersions                   none
//	19   CreateTopics                  admin_topics.go     createTopics                  MsgCreateTopic
//	20   DeleteTopics                  admin_topics.go     deleteTopics                  MsgDeleteTopic
//	21   DeleteRecords                 admin_records.go    deleteRecords                 MsgDeleteRecords
//	22   InitProducerID                txn.go              initProducerID                none: random 62-bit ids; the chain keeps their sequences
//	23   OffsetForLeaderEpoch          admin_cluster.go    offsetForLeaderEpoch          Partitions query
//	24   AddPartitionsToTxn            txn.go              addPartitions                 none: the transaction is held here until EndTxn
//	25   AddOffsetsToTxn               txn.go              addOffsets                    none, as above
//	26   EndTxn                        txn.go              endTxn                        MsgProduce and MsgCommitOffsets in one transaction
//	28   TxnOffsetCommit               txn.go              txnOffsetCommit               none, held until EndTxn
//	29   DescribeACLs                  admin_acls.go       describeACLs                  Topic(s) and Group(s) queries
//	30   CreateACLs                    admin_acls.go       createACLs                    MsgUpdateTopicConfig, MsgUpdateGroupPolicy
//	31   DeleteACLs                    admin_acls.go       deleteACLs                    MsgUpdateTopicConfig, MsgUpdateGroupPolicy
//	32   DescribeConfigs               admin_configs.go    describeConfigs               Topic query
//	33   AlterConfigs                  admin_configs.go    alterConfigs                  MsgUpdateTopicConfig
//	35   DescribeLogDirs               admin_cluster.go    describeLogDirs               Topics and Partitions queries
//	36   SASLAuthenticate              sasl.go             saslAuthenticate              none: the gateway's --users
//	37   CreatePartitions              admin_topics.go     createPartitions              MsgAddPartitions
//	42   DeleteGroups                  admin_groups.go     deleteGroups                  MsgDeleteGroup
//	44   IncrementalAlterConfigs       admin_configs.go    incrementalAlterConfigs       MsgUpdateTopicConfig
//	47   OffsetDelete                  admin_offsets.go    offsetDelete                  MsgDeleteGroupOffsets
//	50   DescribeUserSCRAMCredentials  admin_cluster.go    describeUserSCRAMCredentials  none: the gateway's --users
//	60   DescribeCluster               admin_cluster.go    describeCluster               none: one broker, the gateway
//	61   DescribeProducers             admin_producers.go  describeProducers             KafkaProducerStates query
//	65   DescribeTransactions          admin_txns.go       describeTransactions          none: this gateway's open transactions
//	66   ListTransactions              admin_txns.go       listTransactions              none, as above
//	68   ConsumerGroupHeartbeat        consumer_groups.go  consumerGroupHeartbeat        MsgConsumerGroupHeartbeat when it changes something; ConsumerGroup query
//	69   ConsumerGroupDescribe         consumer_groups.go  consumerGroupDescribe         ConsumerGroup query
//	76   ShareGroupHeartbeat           share_groups.go     shareGroupHeartbeat           MsgShareGroupHeartbeat on a join, leave or new subscription; ShareGroup query
//	77   ShareGroupDescribe            share_groups.go     shareGroupDescribe            ShareGroup query
//	78   ShareFetch                    share_fetch.go      shareFetch                    MsgShareFetch, batched per gateway; SharePartitions and Fetch queries
//	79   ShareAcknowledge              share_fetch.go      shareAcknowledge              MsgShareFetch (acknowledgements only), batched per gateway
//	90   DescribeShareGroupOffsets     share_admin.go      describeShareGroupOffsets     ShareGroup, SharePartitions and Partitions queries
//	91   AlterShareGroupOffsets        share_admin.go      alterShareGroupOffsets        MsgAlterShareGroupOffsets
//	92   DeleteShareGroupOffsets       share_admin.go      deleteShareGroupOffsets       MsgAlterShareGroupOffsets (deletions)
//	71   GetTelemetrySubscriptions     telemetry.go        getTelemetrySubscriptions     none: the gateway's --telemetry-metrics subscription
//	72   PushTelemetry                 telemetry.go        pushTelemetry                 none: exported at the gateway's --metrics-listen
//	75   DescribeTopicPartitions       discovery.go        describeTopicPartitions       Topic and Topics queries
//
// Beside them: server.go (connections, framing, dispatch), limits.go (what a connection and the
// gateway may hold), records.go (record batches), errors.go (chain errors as Kafka codes),
// topic_ids.go (topic IDs), commits.go (admitted commits), groups_chain.go (the groups' chain
// side), producer.go's lanes and telemetry_export.go (the gateway's Prometheus registry, with
// the client metrics pushed to it).
package kafka
