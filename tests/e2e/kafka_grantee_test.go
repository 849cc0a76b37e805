package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bftlog/bftlog/testutil/node"
)

// A topic owner authorizes a gateway's account to produce in its name to one topic
// (tx topics grant-produce: an x/authz ProduceAuthorization); the gateway runs with --granter.
// A franz-go producer's records land with the owner as their producer on a topic only the
// owner may produce to; a topic outside the grant answers TOPIC_AUTHORIZATION_FAILED, and so
// does the granted one once the owner revokes the grant (tx authz revoke).
func TestKafkaGatewayProducesAsGrantee(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "owner", "gateway")
	owner, gatewayAddr := n.Address("owner"), n.Address("gateway")
	// Only the owner may produce to these (an allowlist of the owner alone).
	createTopic(n, "owner", "orders", 2, "--allow-producer", owner)
	createTopic(n, "owner", "secrets", 1, "--allow-producer", owner)
	waitTxOK(t, n, n.MustCLI("", "tx", "topics", "grant-produce", "gateway", "orders", "--from", "owner", "-o", "json"))
	var grants struct {
		Grants []struct {
			Authorization struct {
				Type  string `json:"type"`
				Value struct {
					Topics []string `json:"topics"`
				} `json:"value"`
			} `json:"authorization"`
		} `json:"grants"`
	}
	require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "authz", "grants", owner, gatewayAddr, "-o", "json")), &grants))
	require.Len(t, grants.Grants, 1)
	require.Equal(t, "/bftlog.topics.v1.ProduceAuthorization", grants.Grants[0].Authorization.Type)
	require.Equal(t, []string{"orders"}, grants.Grants[0].Authorization.Value.Topics)

	gw := startGatewayFor(t, n, "gateway", "", owner)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	produce := func(topic string, n int) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(2))
		require.NoError(t, err)
		defer cl.Close()
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s-%d", topic, i)})
		}
		return cl.ProduceSync(ctx, recs...).FirstErr()
	}
	start := time.Now()
	require.NoError(t, produce("orders", 50))
	t.Logf("50 records through the gateway as the owner's grantee in %s", time.Since(start).Round(time.Millisecond))
	lines := strings.Split(strings.TrimSpace(n.MustCLI("", "query", "topics", "consume", "orders", "-o", "json")), "\n")
	require.Len(t, lines, 50)
	for _, l := range lines {
		var r struct {
			Producer string `json:"producer"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		require.Equal(t, owner, r.Producer, "the owner's record, signed by the gateway")
	}

	err := produce("secrets", 1)
	t.Logf("a topic outside the grant: %v", err)
	require.True(t, errors.Is(err, kerr.TopicAuthorizationFailed), "%v", err)

	waitTxOK(t, n, n.MustCLI("", "tx", "authz", "revoke", gatewayAddr, "/bftlog.topics.v1.MsgProduce", "--from", "owner", "-o", "json"))
	err = produce("orders", 1)
	t.Logf("after the owner revoked the grant: %v", err)
	require.True(t, errors.Is(err, kerr.TopicAuthorizationFailed), "%v", err)
	require.Len(t, strings.Split(strings.TrimSpace(n.MustCLI("", "query", "topics", "consume", "orders", "-o", "json")), "\n"), 50)
}
