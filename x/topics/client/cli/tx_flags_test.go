package cli

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/kbatch"
)

// The hand-written tx commands follow the SDK's conventions: with --generate-only they print the
// unsigned transaction (for a multisig account to sign, or a proposal to carry) and send nothing
// — produce once committed its records with it — and --offline needs no node.
func TestTxCommandsGenerateOnly(t *testing.T) {
	g := newGroupCLI(t)

	msg, err := g.runOffline(t, "produce", "orders", "k1:v1", "k2:v2", "--key-separator", ":", "--partition", "1")
	require.NoError(t, err)
	require.Equal(t, "/bftlog.topics.v1.MsgProduce", msg["@type"])
	require.Equal(t, g.addrs["alice"], msg["producer"])
	batches := msg["batches"].([]any)
	require.Len(t, batches, 1)
	b := batches[0].(map[string]any)
	require.Equal(t, "orders", b["topic"])
	require.EqualValues(t, 1, b["partition"])
	raw, err := base64.StdEncoding.DecodeString(b["record_batch"].(string))
	require.NoError(t, err)
	recs, err := kbatch.DecodeRecordBatch(raw)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, "k2", string(recs[1].Key))

	_, err = g.runOffline(t, "produce", "orders", "x")
	require.ErrorContains(t, err, "--partition", "offline, the partitioner has no partition count")

	msg, err = g.run(t, "create-topic", "orders", "--partitions", "3")
	require.NoError(t, err)
	require.Equal(t, "/bftlog.topics.v1.MsgCreateTopic", msg["@type"])
	require.EqualValues(t, 3, msg["partitions"])

	msg, err = g.runOffline(t, "update-topic-config", "orders", "--retention-ms", "1000")
	require.NoError(t, err)
	require.Equal(t, "/bftlog.topics.v1.MsgUpdateTopicConfig", msg["@type"])
	require.Equal(t, "1000", msg["config"].(map[string]any)["retention_ms"])
}

// runOffline is run with --offline (and the account number and sequence it needs, and no chain
// id, which the SDK refuses with --offline and --generate-only).
func (g groupCLI) runOffline(t *testing.T, args ...string) (map[string]any, error) {
	t.Helper()
	return g.generate(t, []string{"--offline", "--account-number", "7", "--sequence", "3"}, args...)
}
