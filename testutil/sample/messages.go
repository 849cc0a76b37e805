// Package sample holds one filled-in instance of every bftlog message, for the tests that prove
// each one encodes (amino JSON, proto JSON) and decodes through the node's REST API.
package sample

import (
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/bech32"

	poatypes "github.com/bftlog/bftlog/x/poa/types"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Messages returns every x/topics and x/poa message with signer as its signer field (for a
// governance proposal, the gov module account). The validator operator of the x/poa messages is
// the signer's own address under the valoper prefix, so no global bech32 config is needed.
func Messages(signer string) []sdk.Msg {
	hrp, bz, err := bech32.DecodeAndConvert(signer)
	if err != nil {
		panic(err)
	}
	operator, err := bech32.ConvertAndEncode(hrp+"valoper", bz)
	if err != nil {
		panic(err)
	}
	params := types.DefaultParams()
	// A real record batch, encoded as a producer does, so the chain and explorers decode it.
	produce, err := types.NewProduceBatch("orders", 2, ProduceRecords(), kbatch.CompressionNone)
	if err != nil {
		panic(err)
	}
	produce.Sequence = 1
	return []sdk.Msg{
		&types.MsgCreateTopic{Owner: signer, Name: "orders", Partitions: 3,
			Config: types.TopicConfig{RetentionMs: 86_400_000, RetentionBytes: -1}},
		&types.MsgUpdateTopicConfig{Authority: signer, Name: "orders",
			Config: types.TopicConfig{MaxRecordBytes: 1024, RetentionMs: 3_600_000, RetentionBytes: 1 << 20,
				ProducerPolicy: types.PRODUCER_POLICY_ALLOWLIST, AllowedProducers: []string{signer}}},
		&types.MsgAddPartitions{Authority: signer, Name: "orders", Partitions: 4},
		&types.MsgDeleteTopic{Authority: signer, Name: "orders"},
		&types.MsgProduce{Producer: signer, Batches: []types.ProduceBatch{produce}},
		&types.MsgUpdateParams{Authority: signer, Params: params},
		&types.MsgJoinGroup{Member: signer, GroupId: "billing", Topics: []string{"orders"},
			Assignor: types.ASSIGNOR_RANGE, SessionTimeoutMs: 30_000},
		&types.MsgLeaveGroup{Member: signer, GroupId: "billing"},
		&types.MsgHeartbeat{Member: signer, GroupId: "billing"},
		&types.MsgCommitOffsets{Member: signer, GroupId: "billing", Generation: 1,
			Offsets: []types.OffsetCommit{{Topic: "orders", Partition: 2, Offset: 2, Metadata: "batch 1"}}},
		&types.MsgResetOffsets{Authority: signer, GroupId: "billing", Topic: "orders", Partitions: []uint32{0, 2},
			To: types.OFFSET_SPEC_EARLIEST},
		&types.MsgDeleteGroup{Authority: signer, GroupId: "billing"},
		&types.MsgCreateGroup{Admin: signer, GroupId: "billing", JoinPolicy: types.JOIN_POLICY_ALLOWLIST,
			AllowedMembers: []string{signer}, Assignor: types.ASSIGNOR_ROUND_ROBIN, SessionTimeoutMs: 30_000},
		&types.MsgUpdateGroupPolicy{Authority: signer, GroupId: "billing", JoinPolicy: types.JOIN_POLICY_ANYONE},
		&types.MsgRemoveGroupMember{Authority: signer, GroupId: "billing", Member: signer},
		&types.MsgTransferGroupAdmin{Authority: signer, GroupId: "billing", NewAdmin: signer},
		&types.MsgKafkaJoinGroup{Owner: signer, GroupId: "ledger", MemberId: "rdkafka-1", ClientId: "rdkafka", ProtocolType: "consumer",
			Protocols:        []types.KafkaProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 1, 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 0}}},
			SessionTimeoutMs: 10_000, RebalanceTimeoutMs: 60_000},
		&types.MsgKafkaSyncGroup{Owner: signer, GroupId: "ledger", MemberId: "rdkafka-1", Generation: 1,
			Assignments: []types.KafkaAssignment{{MemberId: "rdkafka-1", Assignment: []byte{0, 0, 0, 0, 0, 1, 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}}}},
		&types.MsgKafkaHeartbeat{Owner: signer, GroupId: "ledger", MemberIds: []string{"rdkafka-1"}},
		&types.MsgKafkaLeaveGroup{Owner: signer, GroupId: "ledger", MemberIds: []string{"rdkafka-1"}},
		&types.MsgConsumerGroupHeartbeat{Owner: signer, GroupId: "ledger-848", MemberId: "franz-1", ClientId: "kgo", RebalanceTimeoutMs: 60_000,
			SubscribedTopicNames: []string{"orders"}, ServerAssignor: "uniform", OwnedKnown: true,
			Owned: []types.TopicPartitions{{Topic: "orders", Partitions: []uint32{0, 1}}}, MemberEpoch: 3},
		&types.MsgShareGroupHeartbeat{Owner: signer, GroupId: "queue", MemberId: "share-1", ClientId: "kgo", SubscribedTopicNames: []string{"jobs"}},
		&types.MsgShareFetch{Owner: signer, GroupId: "queue", MemberId: "share-1", Tag: "f1",
			Acknowledgements: []types.ShareAcknowledgement{{Topic: "jobs", Partition: 0, FirstOffset: 0, LastOffset: 9, Type: types.ShareAckAccept}},
			Acquire:          []types.ShareAcquire{{Topic: "jobs", Partition: 0, MaxRecords: 500}}},
		&types.MsgSetShareGroupConfig{Authority: signer, GroupId: "queue", RecordLockDurationMs: 60_000, DeliveryCountLimit: 3, AutoOffsetResetEarliest: true},
		&types.MsgAlterShareGroupOffsets{Authority: signer, GroupId: "queue", Offsets: []types.ShareOffset{{Topic: "jobs", Partition: 0, StartOffset: 42}, {Topic: "jobs", Partition: 1, Delete: true}}},
		&types.MsgDeleteRecords{Authority: signer, Partitions: []types.DeleteRecordsPartition{
			{Topic: "orders", Partition: 0, Offset: 2}, {Topic: "orders", Partition: 1, ToHighWatermark: true}}},
		&types.MsgDeleteGroupOffsets{Authority: signer, GroupId: "billing", Partitions: []types.DeleteGroupOffsetsPartition{
			{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 2}}},
		&poatypes.MsgAdmitValidator{Authority: signer, Operator: operator, Power: 50},
		&poatypes.MsgSetValidatorPower{Authority: signer, Operator: operator, Power: 80},
		&poatypes.MsgRemoveValidator{Authority: signer, Operator: operator},
		&poatypes.MsgSetDataPlaneEndpoint{Operator: signer, Endpoint: "http://10.0.0.1:26680"},
	}
}

// ProduceRecords are the records of the sample MsgProduce: one keyed with a header and a
// CreateTime, one with neither key, headers nor CreateTime.
func ProduceRecords() []types.BatchRecord {
	return []types.BatchRecord{
		{Key: &types.Bytes{Data: []byte("customer-7")}, Value: &types.Bytes{Data: []byte(`{"total":42}`)},
			Headers: []types.Header{{Key: "source", Value: []byte("pos")}}, CreateTimeMs: 1_764_000_000_000},
		{Value: &types.Bytes{Data: []byte("no key")}},
	}
}
