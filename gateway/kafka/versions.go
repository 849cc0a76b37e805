package kafka

import (
	"reflect"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// versions are the request versions the gateway answers, by API key: ranges whose fields it
// fills correctly (record batches of magic 2), up to Kafka 4.0's (topic IDs: topic_ids.go).
// Produce starts at v0 although only magic 2 is accepted (older message sets are refused as
// CORRUPT_MESSAGE): librdkafka before 2.4 compresses with gzip, snappy or lz4 only for a broker
// that lists Produce v0.
//
// Transactions stay on KIP-890's first flow: ApiVersions advertises no transaction.version
// feature, so clients add partitions and offsets themselves (Java and franz-go send Produce
// v11, TxnOffsetCommit v4 and EndTxn v4 in a transaction then). The KIP-890 part 2 versions are
// still served, as a Kafka 4.0 broker lists them whatever the feature: Produce v12 and
// TxnOffsetCommit v5 as v11 and v4 (the gateway needs no AddPartitionsToTxn or AddOffsetsToTxn
// before them), and EndTxn v5 with v4's outcome and no epoch bump, its producer id and epoch
// answered -1 ("keep yours"). AddPartitionsToTxn stops at v3: v4+ batches transactions and
// verifies partitions for a partition leader on another broker (CLUSTER_ACTION, "versions 4
// and above will be used by brokers"); clients send v3 or lower, and a gateway keeps its
// transactions to itself, so no other broker asks it.
var versions = map[kmsg.Key][2]int16{
	kmsg.Produce:                      {0, 13},
	kmsg.Fetch:                        {4, 18},
	kmsg.ListOffsets:                  {1, 11},
	kmsg.Metadata:                     {1, 13},
	kmsg.OffsetCommit:                 {2, 10},
	kmsg.OffsetFetch:                  {1, 10},
	kmsg.FindCoordinator:              {0, 6},
	kmsg.JoinGroup:                    {0, 9},
	kmsg.Heartbeat:                    {0, 4},
	kmsg.LeaveGroup:                   {0, 5},
	kmsg.SyncGroup:                    {0, 5},
	kmsg.ApiVersions:                  {0, 5},
	kmsg.CreateTopics:                 {0, 7},
	kmsg.DeleteTopics:                 {0, 6},
	kmsg.InitProducerID:               {0, 5},
	kmsg.DescribeConfigs:              {0, 4},
	kmsg.IncrementalAlterConfigs:      {0, 1},
	kmsg.AlterConfigs:                 {0, 2},
	kmsg.CreatePartitions:             {0, 3},
	kmsg.SASLHandshake:                {0, 1},
	kmsg.SASLAuthenticate:             {0, 2},
	kmsg.AddPartitionsToTxn:           {0, 3},
	kmsg.AddOffsetsToTxn:              {0, 4},
	kmsg.EndTxn:                       {0, 5},
	kmsg.TxnOffsetCommit:              {0, 6},
	kmsg.ListGroups:                   {0, 5},
	kmsg.DescribeGroups:               {0, 6},
	kmsg.DeleteGroups:                 {0, 2},
	kmsg.DescribeCluster:              {0, 2},
	kmsg.OffsetForLeaderEpoch:         {0, 4},
	kmsg.DescribeLogDirs:              {0, 4},
	kmsg.DescribeUserSCRAMCredentials: {0, 0},
	kmsg.ListTransactions:             {0, 2},
	kmsg.OffsetDelete:                 {0, 0},
	kmsg.DescribeProducers:            {0, 0},
	kmsg.DeleteRecords:                {0, 2},
	kmsg.CreateACLs:                   {0, 3},
	kmsg.DescribeACLs:                 {0, 3},
	kmsg.DeleteACLs:                   {0, 3},
	kmsg.DescribeTransactions:         {0, 0},
	kmsg.DescribeTopicPartitions:      {0, 0},
	kmsg.ConsumerGroupHeartbeat:       {1, 1},
	kmsg.ConsumerGroupDescribe:        {0, 1},
	kmsg.ShareGroupHeartbeat:          {1, 1},
	kmsg.ShareGroupDescribe:           {1, 1},
	kmsg.ShareFetch:                   {1, 1},
	kmsg.ShareAcknowledge:             {1, 1},
	kmsg.DescribeShareGroupOffsets:    {0, 1},
	kmsg.AlterShareGroupOffsets:       {0, 0},
	kmsg.DeleteShareGroupOffsets:      {0, 0},
	kmsg.GetTelemetrySubscriptions:    {0, 0},
	kmsg.PushTelemetry:                {0, 0},
}

func supported(key, version int16) bool {
	v, ok := versions[kmsg.Key(key)]
	return ok && version >= v[0] && version <= v[1]
}

func apiVersions(r *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(r.Version)
	// v5 (KIP-1242): a client that says which cluster and broker it meant to reach is told to
	// bootstrap again when it reached another (a gateway is broker brokerID of cluster bftlog).
	if r.Version >= 5 && r.ClusterID != nil && r.NodeID >= 0 && (*r.ClusterID != clusterID || r.NodeID != brokerID) {
		resp.ErrorCode = kerr.RebootstrapRequired.Code
		return resp
	}
	keys := make([]kmsg.Key, 0, len(versions))
	for key := range versions {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		v := versions[key]
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = key.Int16(), v[0], v[1]
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// unsupported answers a request the gateway does not serve (or at a version it does not) with
// UNSUPPORTED_VERSION in the response's error code, rather than closing the connection.
func unsupported(key, version int16) kmsg.Response {
	resp := kmsg.ResponseForKey(key)
	if resp == nil {
		return nil
	}
	if key == kmsg.ApiVersions.Int16() { // answer v0 with the supported list, as brokers do
		out := apiVersions(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
		out.ErrorCode = kerr.UnsupportedVersion.Code
		return out
	}
	v := version
	if v > resp.MaxVersion() {
		v = resp.MaxVersion()
	}
	resp.SetVersion(v)
	setErrorCode(resp, kerr.UnsupportedVersion.Code)
	return resp
}

func invalidRequest(req kmsg.Request) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	setErrorCode(resp, kerr.InvalidRequest.Code)
	return resp
}

// setErrorCode sets a response's top-level ErrorCode when it has one.
func setErrorCode(resp kmsg.Response, code int16) {
	f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
	if f.IsValid() && f.CanSet() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
	}
}
