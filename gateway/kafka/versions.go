package kafka

import (
	"reflect"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

// versions are the request versions the gateway answers, by API key: ranges whose fields it
// fills correctly (no topic IDs; record batches of magic 2).
var versions = map[int16][2]int16{
	0:  {3, 9},  // Produce
	1:  {4, 12}, // Fetch
	2:  {1, 7},  // ListOffsets
	3:  {1, 9},  // Metadata
	8:  {2, 7},  // OffsetCommit
	9:  {1, 7},  // OffsetFetch
	10: {0, 3},  // FindCoordinator
	11: {0, 5},  // JoinGroup
	12: {0, 3},  // Heartbeat
	13: {0, 3},  // LeaveGroup
	14: {0, 3},  // SyncGroup
	18: {0, 3},  // ApiVersions
	19: {0, 5},  // CreateTopics
	20: {0, 5},  // DeleteTopics
	22: {0, 4},  // InitProducerID
	32: {0, 4},  // DescribeConfigs
	37: {0, 3},  // CreatePartitions
}

func supported(key, version int16) bool {
	v, ok := versions[key]
	return ok && version >= v[0] && version <= v[1]
}

// Kafka error codes the gateway answers with.
const (
	errUnknownServer          int16 = -1
	errOffsetOutOfRange       int16 = 1
	errCorruptMessage         int16 = 2
	errUnknownTopicOrPart     int16 = 3
	errRequestTimedOut        int16 = 7
	errMessageTooLarge        int16 = 10
	errInvalidTopic           int16 = 17
	errRecordListTooLarge     int16 = 18
	errTopicAuthorization     int16 = 29
	errUnsupportedVersion     int16 = 35
	errTopicAlreadyExists     int16 = 36
	errInvalidPartitions      int16 = 37
	errInvalidReplication     int16 = 38
	errInvalidConfig          int16 = 40
	errInvalidRequest         int16 = 42
	errPolicyViolation        int16 = 44
	errOutOfOrderSequence     int16 = 45
	errUnsupportedCompression int16 = 76
	errInvalidRecord          int16 = 87
)

// kafkaCode maps an error from the chain (its text carries the x/topics error) to Kafka's code.
func kafkaCode(err error) int16 {
	if err == nil {
		return 0
	}
	_, code := types.FindError(err.Error())
	switch code {
	case types.ErrInvalidTopicName.ABCICode():
		return errInvalidTopic
	case types.ErrTopicExists.ABCICode():
		return errTopicAlreadyExists
	case types.ErrUnknownTopic.ABCICode(), types.ErrInvalidPartition.ABCICode():
		return errUnknownTopicOrPart
	case types.ErrRecordTooLarge.ABCICode():
		return errMessageTooLarge
	case types.ErrBatchTooLarge.ABCICode(), types.ErrTooManyRecords.ABCICode():
		return errRecordListTooLarge
	case types.ErrTooManyPartitions.ABCICode(), types.ErrPartitionsNotIncrease.ABCICode(), types.ErrInvalidPartitionCount.ABCICode():
		return errInvalidPartitions
	case types.ErrUnauthorizedProducer.ABCICode(), types.ErrUnauthorized.ABCICode():
		return errTopicAuthorization
	case types.ErrOffsetOutOfRange.ABCICode():
		return errOffsetOutOfRange
	case types.ErrInvalidConfig.ABCICode():
		return errInvalidConfig
	case types.ErrEmptyBatch.ABCICode(), types.ErrTooManyHeaders.ABCICode():
		return errInvalidRecord
	case types.ErrOutOfOrderSequence.ABCICode():
		return errOutOfOrderSequence
	case types.ErrInvalidRequest.ABCICode():
		return errInvalidRequest
	case types.ErrInvalidGroupID.ABCICode():
		return errInvalidGroupID
	case types.ErrIllegalGeneration.ABCICode():
		return errIllegalGeneration
	case types.ErrUnknownMember.ABCICode():
		return errUnknownMemberID
	}
	if strings.Contains(err.Error(), "timed out") {
		return errRequestTimedOut
	}
	return errUnknownServer
}

func apiVersions(r *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(r.Version)
	keys := make([]int16, 0, len(versions))
	for key := range versions {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		v := versions[key]
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: key, MinVersion: v[0], MaxVersion: v[1]})
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
	if key == 18 { // ApiVersions: answer v0 with the supported list, as brokers do
		out := apiVersions(&kmsg.ApiVersionsRequest{Version: 0}).(*kmsg.ApiVersionsResponse)
		out.ErrorCode = errUnsupportedVersion
		return out
	}
	v := version
	if v > resp.MaxVersion() {
		v = resp.MaxVersion()
	}
	resp.SetVersion(v)
	setErrorCode(resp, errUnsupportedVersion)
	return resp
}

func invalidRequest(req kmsg.Request) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	setErrorCode(resp, errInvalidRequest)
	return resp
}

// setErrorCode sets a response's top-level ErrorCode when it has one.
func setErrorCode(resp kmsg.Response, code int16) {
	f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
	if f.IsValid() && f.CanSet() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
	}
}
