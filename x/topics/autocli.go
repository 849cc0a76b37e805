package topics

import (
	autocliv1 "cosmossdk.io/api/cosmos/autocli/v1"
)

// AutoCLIOptions describes the generated query and tx commands; produce, consume, create-topic,
// update-topic-config, create-group and update-group-policy are hand-written in client/cli
// because they parse records, configs and lists of key names.
func (AppModule) AutoCLIOptions() *autocliv1.ModuleOptions {
	return &autocliv1.ModuleOptions{
		Query: &autocliv1.ServiceCommandDescriptor{
			Service:              "bftlog.topics.v1.Query",
			EnhanceCustomCommand: true,
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "Params", Use: "params", Short: "Show the x/topics module params"},
				{
					RpcMethod: "Topic", Use: "topic [name]", Short: "Show one topic and its config",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "name"}},
				},
				{RpcMethod: "Topics", Use: "topics", Short: "List topics"},
				// Hand-written in client/cli because bftlogd gives them --verify (client/verifycli).
				{RpcMethod: "Partitions", Skip: true},
				{RpcMethod: "Fetch", Skip: true},
				{RpcMethod: "GroupOffsets", Skip: true},
				{
					RpcMethod: "Record", Use: "record [topic] [partition] [offset]", Short: "Show the record at one offset",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "topic"}, {ProtoField: "partition"}, {ProtoField: "offset"}},
				},
				{
					RpcMethod: "ProducerStates", Use: "producer-states [topic] [partition]",
					Short:          "Idempotent producers of a partition: the last sequence accepted from each (--producer for one)",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "topic"}, {ProtoField: "partition"}},
				},
				{
					RpcMethod: "KafkaProducerStates", Use: "kafka-producers [topic] [partition]",
					Short:          "Kafka idempotent producers of a partition: producer id, epoch and last batches, per account (Kafka's DescribeProducers)",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "topic"}, {ProtoField: "partition"}},
				},
				{
					RpcMethod: "ListOffsets", Use: "list-offsets [topic] [partition]",
					Short:          "Earliest, latest, or first offset at or after --timestamp-ms (Kafka ListOffsets / offsetsForTimes)",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "topic"}, {ProtoField: "partition"}},
				},
				{RpcMethod: "Groups", Use: "groups", Short: "List consumer groups"},
				{
					RpcMethod: "Group", Use: "group [group-id]", Short: "Show a group: generation, members, assignment",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}},
				},
				{
					RpcMethod: "KafkaGroup", Use: "kafka-group [group-id]", Short: "Show a Kafka-protocol group (members of Kafka clients through gateways): state, generation, leader, members",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}},
				},
				{
					RpcMethod: "ConsumerGroup", Use: "consumer-group [group-id]", Short: "Show a KIP-848 consumer group (Kafka clients with group.protocol=consumer): group and assignment epochs, members with their assigned, pending-revocation and target partitions",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}},
				},
				{
					RpcMethod: "ShareGroup", Use: "share-group [group-id]", Short: "Show a KIP-932 share group (a queue read by Kafka share consumers): epoch, share.* configs, members with the partitions dealt to them",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}},
				},
				{
					RpcMethod: "SharePartitions", Use: "share-partitions [group-id]", Short: "Show a share group's partitions: start and end offsets, and each in-flight run of records with its state, delivery count, member and lock deadline",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}},
				},
				{
					RpcMethod: "Lag", Use: "lag [group-id]", Short: "Show a group's lag per partition: high watermark minus committed offset",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}},
				},
			},
		},
		Tx: &autocliv1.ServiceCommandDescriptor{
			Service:              "bftlog.topics.v1.Msg",
			EnhanceCustomCommand: true,
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "CreateTopic", Skip: true},
				{RpcMethod: "UpdateTopicConfig", Skip: true},
				{RpcMethod: "Produce", Skip: true},
				{
					RpcMethod: "AddPartitions", Use: "add-partitions [name] [total]", Short: "Raise a topic's partition count to a new total (owner or gov)",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "name"}, {ProtoField: "partitions"}},
				},
				{
					RpcMethod: "DeleteTopic", Use: "delete-topic [name]", Short: "Delete a topic with all its records (owner or gov)",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "name"}},
				},
				{RpcMethod: "UpdateParams", Skip: true, GovProposal: true},
				{RpcMethod: "CommitOffsets", Skip: true}, // consume --group commits as it goes
				// Kafka's group protocol, spoken by Kafka clients through bftlogd kafka serve.
				{RpcMethod: "KafkaJoinGroup", Skip: true},
				{RpcMethod: "KafkaSyncGroup", Skip: true},
				{RpcMethod: "KafkaHeartbeat", Skip: true},
				{RpcMethod: "KafkaLeaveGroup", Skip: true},
				{RpcMethod: "ConsumerGroupHeartbeat", Skip: true},
				{RpcMethod: "ShareGroupHeartbeat", Skip: true},
				{RpcMethod: "ShareFetch", Skip: true},
				{
					RpcMethod: "SetShareGroupConfig", Use: "set-share-group-config [group-id] [lock-duration-ms] [delivery-count-limit]", Short: "Set a share group's share.record.lock.duration.ms and share.delivery.count.limit (its admin); --auto-offset-reset-earliest starts new partitions at their log start offset",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}, {ProtoField: "record_lock_duration_ms"}, {ProtoField: "delivery_count_limit"}},
				},
				{RpcMethod: "AlterShareGroupOffsets", Skip: true}, // through the Kafka admin APIs (AlterShareGroupOffsets, DeleteShareGroupOffsets)
				{RpcMethod: "ResetOffsets", Skip: true},           // hand-written: reset-offsets
				{
					RpcMethod: "JoinGroup", Use: "join-group [group-id] [topic]...", Short: "Join a consumer group subscribed to topics (a new group is created admitting only you)",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}, {ProtoField: "topics", Varargs: true}},
				},
				{
					RpcMethod: "LeaveGroup", Use: "leave-group [group-id]", Short: "Leave a consumer group",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}},
				},
				{
					RpcMethod: "Heartbeat", Use: "heartbeat [group-id]", Short: "Keep a group membership alive",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}},
				},
				{
					RpcMethod: "DeleteRecords", Use: "delete-records [partition-json]...",
					Short:          "Delete records below offsets, as Kafka's DeleteRecords: move partitions' log start offsets (topic owner or gov)",
					Long:           "Each argument is one partition as JSON: {\"topic\",\"partition\",\"offset\"} moves its log start offset up to offset, or {\"topic\",\"partition\",\"to_high_watermark\":true} deletes every record. Offsets at or below the log start offset change nothing; past the high watermark the message is refused. The EndBlocker deletes the batches below over the next blocks.",
					Example:        `bftlogd tx topics delete-records '{"topic":"orders","partition":0,"offset":"1000"}' '{"topic":"orders","partition":1,"to_high_watermark":true}' --from alice`,
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "partitions", Varargs: true}},
				},
				{
					RpcMethod: "DeleteGroup", Use: "delete-group [group-id]", Short: "Delete an empty group and its offsets (group admin or gov)",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}},
				},
				{
					RpcMethod: "DeleteGroupOffsets", Use: "delete-group-offsets [group-id] [partition-json]...",
					Short:          "Delete a group's committed offsets, as Kafka's OffsetDelete (group admin or gov)",
					Long:           "Each argument after the group is one partition as JSON: {\"topic\",\"partition\"}. The group's consumers start there from their auto.offset.reset policy. Refused while a member of the group consumes a topic named (for a Kafka-protocol group: while it has any member and offsets on the topic); a partition without a committed offset changes nothing.",
					Example:        `bftlogd tx topics delete-group-offsets ledger '{"topic":"orders","partition":0}' '{"topic":"orders","partition":1}' --from alice`,
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}, {ProtoField: "partitions", Varargs: true}},
				},
				// Hand-written in client/cli: their --allowed-members takes key names and comma lists.
				{RpcMethod: "CreateGroup", Skip: true},
				{RpcMethod: "UpdateGroupPolicy", Skip: true},
				{
					RpcMethod: "RemoveGroupMember", Use: "remove-group-member [group-id] [member]",
					Short:          "Remove a member and its assignment, and drop it from the allowlist (group admin or gov)",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}, {ProtoField: "member"}},
				},
				{
					RpcMethod: "TransferGroupAdmin", Use: "transfer-group-admin [group-id] [new-admin]",
					Short:          "Make another account the group's admin (group admin or gov)",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "group_id"}, {ProtoField: "new_admin"}},
				},
			},
		},
	}
}
