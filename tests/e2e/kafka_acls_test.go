package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/types"
)

// TestKafkaACLsChangeChainPermissions creates, describes and deletes ACLs with kadm through a
// gateway that signs as alice, the owner of a topic and the admin of a group: an ACL is a
// transaction that changes who the chain lets write and join, visible with `bftlogd query`;
// bob's gateway cannot grant on alice's topic or group (the chain refuses), and what cannot be
// expressed on chain (a DENY) is refused with a message, not accepted.
func TestKafkaACLsChangeChainPermissions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice", "bob", "carol")
	gw := startGateway(t, n, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	createTopic(n, "alice", "acl-t", 1)
	n.MustCLI("", "tx", "topics", "create-group", "acl-g", "--from", "alice")
	bob, carol := n.Address("bob"), n.Address("carol")
	produce := func(from string) error {
		return n.CLI("", "tx", "topics", "produce", "acl-t", "from-"+from, "--from", from).Err
	}
	// refused requires from's produce to be refused by the topic's allowlist (x/topics' code 10,
	// Kafka's TOPIC_AUTHORIZATION_FAILED), not by anything else.
	refused := func(from, why string) {
		t.Helper()
		r := n.CLI("", "tx", "topics", "produce", "acl-t", "from-"+from, "--from", from)
		require.Error(t, r.Err, why)
		require.Contains(t, r.Stderr, fmt.Sprintf("%s may not produce to topic %q: %s (codespace %s, code %d)",
			n.Address(from), "acl-t", types.ErrUnauthorizedProducer.Error(), types.ModuleName, types.ErrUnauthorizedProducer.ABCICode()), why)
	}
	require.NoError(t, produce("carol"), "no ACLs: anyone may write")

	adm := kadm.NewClient(must(kgo.NewClient(kgo.SeedBrokers(gw.Addr()))))
	defer adm.Close()
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:"+bob).Topics("acl-t").Operations(kadm.OpWrite))
	require.NoError(t, err)
	require.Len(t, created, 1)
	require.NoError(t, created[0].Err)
	created, err = adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:"+bob).Groups("acl-g").Operations(kadm.OpRead))
	require.NoError(t, err)
	require.NoError(t, created[0].Err)

	topic := n.MustCLI("", "query", "topics", "topic", "acl-t")
	require.Contains(t, topic, "PRODUCER_POLICY_ALLOWLIST")
	require.Contains(t, topic, bob)
	group := n.MustCLI("", "query", "topics", "group", "acl-g")
	require.Contains(t, group, "JOIN_POLICY_ALLOWLIST")
	require.Contains(t, group, bob)
	require.NoError(t, produce("bob"), "bob may write")
	require.NoError(t, produce("alice"), "the owner may write")
	refused("carol", "carol may no longer write")

	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	require.NoError(t, err)
	var seen []string
	for _, r := range described {
		require.NoError(t, r.Err)
		for _, d := range r.Described {
			require.Equal(t, "User:"+bob, d.Principal)
			require.Equal(t, "*", d.Host)
			seen = append(seen, d.Name+"/"+d.Operation.String())
		}
	}
	require.ElementsMatch(t, []string{"acl-t/WRITE", "acl-g/READ"}, seen)

	// Bob's gateway cannot grant on alice's topic or group: the chain refuses the transaction.
	bobGW := startGateway(t, n, "bob")
	bobAdm := kadm.NewClient(must(kgo.NewClient(kgo.SeedBrokers(bobGW.Addr()))))
	defer bobAdm.Close()
	start := time.Now()
	stolen, err := bobAdm.CreateACLs(ctx, kadm.NewACLs().Allow("User:"+carol).Topics("acl-t").Operations(kadm.OpWrite))
	require.NoError(t, err)
	require.ErrorIs(t, stolen[0].Err, kerr.TopicAuthorizationFailed)
	stolen, err = bobAdm.CreateACLs(ctx, kadm.NewACLs().Allow("User:"+carol).Groups("acl-g").Operations(kadm.OpRead))
	require.NoError(t, err)
	require.ErrorIs(t, stolen[0].Err, kerr.GroupAuthorizationFailed)
	t.Logf("bob's ACLs on alice's topic and group refused by the chain in %v", time.Since(start).Round(time.Millisecond))
	require.NotContains(t, n.MustCLI("", "query", "topics", "topic", "acl-t"), carol)
	require.NotContains(t, n.MustCLI("", "query", "topics", "group", "acl-g"), carol)

	// A DENY cannot be expressed with allowlists: refused, saying what can.
	denied, err := adm.CreateACLs(ctx, kadm.NewACLs().Deny("User:"+carol).Topics("acl-t").Operations(kadm.OpWrite))
	require.NoError(t, err)
	require.ErrorIs(t, denied[0].Err, kerr.InvalidRequest)
	require.Contains(t, denied[0].ErrMessage, "only ALLOW")

	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:"+bob).AllowHosts().Topics("acl-t").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	require.NoError(t, err)
	require.Len(t, deleted, 1)
	require.NoError(t, deleted[0].Err)
	require.Len(t, deleted[0].Deleted, 1)
	require.NoError(t, deleted[0].Deleted[0].Err)
	refused("bob", "bob's ACL is gone")
	require.NoError(t, produce("alice"), "the last ACL gone, the topic stays its owner's")
	t.Logf("ACLs: WRITE on acl-t and READ on acl-g for bob became the chain's allowlists; carol refused; a DENY refused; deleting bob's WRITE refused his next produce")
}
