package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/bftlog/bftlog/testutil/node"
)

// startSASLGateway runs `bftlogd kafka serve --users file` as a process: Kafka users alice and
// bob, each signing with its own key.
func startSASLGateway(t *testing.T, n *node.Node) string {
	t.Helper()
	users := filepath.Join(t.TempDir(), "users.json")
	require.NoError(t, os.WriteFile(users, []byte(`{"users": [
		{"name": "alice", "password": "alice-secret", "key": "alice"},
		{"name": "bob", "password": "bob-secret", "key": "bob"}]}`), 0o600))
	return runGateway(t, n, nil, "--users", users, "--from", "alice", "--node", n.RPC, "--ingress", n.API)
}

// runGateway runs `bftlogd kafka serve` on a free port with n's home, chain id and test keyring
// and args, logs its lines (and hands each to onLine, if set, when it is read) and returns its
// address once it listens.
func runGateway(t *testing.T, n *node.Node, onLine func(string), args ...string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", node.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, n.Bin, append([]string{"kafka", "serve", "--listen", addr,
		"--home", n.Home, "--chain-id", node.ChainID, "--keyring-backend", "test"}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on") {
				close(ready)
			}
			if onLine != nil {
				onLine(sc.Text())
			}
			t.Log("gateway: " + sc.Text())
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatal("the gateway did not start")
	}
	return addr
}

func saslClient(t *testing.T, addr string, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(m), kgo.DefaultProduceTopic("payments"),
		kgo.RecordRetries(1), kgo.RequestRetries(1)}, opts...)
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// TestAttackKafkaGatewaySASLIdentities: with users configured, a client that does not authenticate
// is refused, a wrong password is SASL_AUTHENTICATION_FAILED, and an authenticated client's
// appends are signed with its own account — so the topic's producer allowlist judges the
// client (alice may, bob gets TOPIC_AUTHORIZATION_FAILED) and a group admitting only alice
// refuses bob with GROUP_AUTHORIZATION_FAILED. PLAIN and SCRAM-SHA-256/512, franz-go and kcat.
func TestAttackKafkaGatewaySASLIdentities(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice", "bob")
	alice := n.Address("alice")
	createTopic(n, "alice", "payments", 2, "--allow-producer", alice)
	addr := startSASLGateway(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// No SASL: the gateway closes the connection at the first request past ApiVersions.
	anon, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("payments"), kgo.RequestRetries(0), kgo.RecordRetries(1))
	require.NoError(t, err)
	defer anon.Close()
	actx, acancel := context.WithTimeout(ctx, 10*time.Second)
	require.Error(t, anon.ProduceSync(actx, &kgo.Record{Value: []byte("anonymous")}).FirstErr())
	acancel()

	wrong := saslClient(t, addr, plain.Auth{User: "alice", Pass: "guess"}.AsMechanism())
	err = wrong.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
	require.True(t, errors.Is(err, kerr.SaslAuthenticationFailed), "wrong password: %v", err)

	for _, m := range []sasl.Mechanism{
		plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(),
		scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(),
	} {
		cl := saslClient(t, addr, m)
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("by alice over " + m.Name())}).FirstErr(), m.Name())
	}
	bob := saslClient(t, addr, scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism())

	// DescribeUserScramCredentials lists the gateway's users and mechanisms, never a secret.
	scrams, err := kadm.NewClient(bob).DescribeUserSCRAMs(ctx)
	require.NoError(t, err)
	require.Len(t, scrams, 2)
	for _, u := range []string{"alice", "bob"} {
		require.NoError(t, scrams[u].Err)
		require.Len(t, scrams[u].CredInfos, 2, "SCRAM-SHA-256 and SCRAM-SHA-512")
	}
	err = bob.ProduceSync(ctx, &kgo.Record{Value: []byte("by bob")}).FirstErr()
	require.True(t, errors.Is(err, kerr.TopicAuthorizationFailed), "bob is not on the allowlist: %v", err)

	// The chain recorded alice's account as the producer of what she sent through the gateway.
	out := n.MustCLI("", "query", "topics", "fetch", "payments", "0", "0", "-o", "json") + n.MustCLI("", "query", "topics", "fetch", "payments", "1", "0", "-o", "json")
	require.Contains(t, out, alice)
	require.NotContains(t, out, "by bob")

	// Groups: alice's first join creates "ledger" admitting only her; bob is refused.
	aliceReader := saslClient(t, addr, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(),
		kgo.ConsumerGroup("ledger"), kgo.ConsumeTopics("payments"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < 3 {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		fs := aliceReader.PollFetches(pctx)
		pcancel()
		require.NoError(t, ctx.Err())
		got += fs.NumRecords()
	}
	bobReader := saslClient(t, addr, plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism(),
		kgo.ConsumerGroup("ledger"), kgo.ConsumeTopics("payments"))
	var groupErr error
	for groupErr == nil && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		fs := bobReader.PollFetches(pctx)
		pcancel()
		fs.EachError(func(_ string, _ int32, err error) {
			if errors.Is(err, kerr.GroupAuthorizationFailed) {
				groupErr = err
			}
		})
	}
	require.ErrorIs(t, groupErr, kerr.GroupAuthorizationFailed)

	// librdkafka with SCRAM-SHA-256 reads alice's records as alice.
	kcat, err := exec.LookPath("kcat")
	require.NoError(t, err)
	kout, err := exec.CommandContext(ctx, kcat, "-b", addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-256",
		"-X", "sasl.username=alice", "-X", "sasl.password=alice-secret", "-C", "-t", "payments", "-o", "beginning", "-e", "-q", "-f", "%s\n").CombinedOutput()
	require.NoError(t, err, string(kout))
	require.Equal(t, 3, strings.Count(string(kout), "by alice over"), string(kout))
	t.Logf("SASL: anonymous refused, wrong password refused, alice produced over PLAIN and SCRAM-SHA-256/512 and consumed as group ledger, bob refused by the topic allowlist and the group policy, kcat (SCRAM-SHA-256) read %d records", strings.Count(string(kout), "by alice over"))
}
