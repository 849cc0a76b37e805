package kafka

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator answers this gateway for groups and transactional ids: v0-v3 one key, v4+
// every key of the batch in its own entry (KIP-699). Share groups (v6's key type 2), or any
// other type, are INVALID_REQUEST with Kafka's "no node".
func TestFindCoordinatorBatchesKeys(t *testing.T) {
	s := &Server{host: "gw.example", port: 9093}
	for _, v := range []int16{0, 3} {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.SetVersion(v)
		r.CoordinatorKey = "billing"
		res := s.findCoordinator(r).(*kmsg.FindCoordinatorResponse)
		require.Zero(t, res.ErrorCode)
		require.Equal(t, []any{int32(brokerID), "gw.example", int32(9093)}, []any{res.NodeID, res.Host, res.Port}, "v%d", v)
	}
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.SetVersion(3)
	r.CoordinatorType, r.CoordinatorKey = 2, "share"
	res := s.findCoordinator(r).(*kmsg.FindCoordinatorResponse)
	require.Equal(t, kerr.InvalidRequest.Code, res.ErrorCode)
	require.EqualValues(t, -1, res.NodeID)

	for _, v := range []int16{4, 5, 6} {
		for _, typ := range []int8{coordinatorGroup, coordinatorTransaction} {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.SetVersion(v)
			r.CoordinatorType, r.CoordinatorKeys = typ, []string{"billing", "shipping", "txn-1"}
			res := s.findCoordinator(r).(*kmsg.FindCoordinatorResponse)
			require.Len(t, res.Coordinators, 3)
			for i, c := range res.Coordinators {
				require.Equal(t, r.CoordinatorKeys[i], c.Key)
				require.Zero(t, c.ErrorCode)
				require.Equal(t, []any{int32(brokerID), "gw.example", int32(9093)}, []any{c.NodeID, c.Host, c.Port})
			}
			// Encoded and read back as a client would: the batch survives the wire.
			back := kmsg.NewPtrFindCoordinatorResponse()
			back.SetVersion(v)
			require.NoError(t, back.ReadFrom(res.AppendTo(nil)))
			require.Len(t, back.Coordinators, 3)
		}
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.SetVersion(v)
		r.CoordinatorType, r.CoordinatorKeys = 2, []string{"share-a", "share-b"}
		res := s.findCoordinator(r).(*kmsg.FindCoordinatorResponse)
		require.Len(t, res.Coordinators, 2)
		for _, c := range res.Coordinators {
			require.Equal(t, kerr.InvalidRequest.Code, c.ErrorCode)
			require.EqualValues(t, -1, c.NodeID)
		}
	}
}
