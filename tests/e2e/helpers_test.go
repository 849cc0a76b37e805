package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/gateway/kafka"
	"github.com/bftlog/bftlog/testutil/node"
)

// Helpers shared by the end-to-end tests.

// TestMain removes the bftlogd this test process built once every test is done.
func TestMain(m *testing.M) { os.Exit(node.Main(m)) }

// startGateway runs a Kafka gateway on a free port in front of n, signing as key.
func startGateway(t *testing.T, n *node.Node, key string) *kafka.Server {
	return startGatewayAdvertising(t, n, key, "")
}

// startGatewayAdvertising is startGateway giving clients advertise (a balancer) as its address.
func startGatewayAdvertising(t *testing.T, n *node.Node, key, advertise string) *kafka.Server {
	return startGatewayFor(t, n, key, advertise, "")
}

// startGatewayFor is startGatewayAdvertising producing in granter's name as its x/authz
// grantee (`bftlogd kafka serve --granter`), or as key's own account when granter is "".
func startGatewayFor(t *testing.T, n *node.Node, key, advertise, granter string) *kafka.Server {
	cctx, signer := n.ClientContext(n.Home, key)
	if granter != "" {
		signer.UseGrant(granter)
	}
	// As `bftlogd kafka serve --ingress` runs it: appends through the node's binary ingress.
	signer.UseRawIngress(n.API + app.RawTxPath)
	// Its log goes to the test's, so that a failure shows what the gateway answered and why;
	// not after the test ends (the testing package panics on a late log).
	var logMu sync.Mutex
	ended := false
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		if !ended {
			t.Logf("gateway: "+format, args...)
		}
	}
	gw, err := kafka.Listen(kafka.Config{Addr: "127.0.0.1:0", Advertise: advertise, ClientCtx: cctx, Signer: signer, Log: logf})
	require.NoError(t, err)
	go func() { _ = gw.Serve() }()
	t.Cleanup(func() {
		_ = gw.Close()
		logMu.Lock()
		ended = true
		logMu.Unlock()
	})
	return gw
}

// createTopic creates topic with partitions partitions, signed by from, with the CLI, and
// returns its output; extra flags follow.
func createTopic(n *node.Node, from, topic string, partitions int, extra ...string) string {
	args := append([]string{"tx", "topics", "create-topic", topic, "--partitions", fmt.Sprint(partitions)}, extra...)
	return n.MustCLI("", append(args, "--from", from)...)
}

// eventually waits up to d for f to hold, polling every 300 ms, and fails the test naming what.
func eventually(t *testing.T, what string, d time.Duration, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if f() {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// must is v, and panics on err: for clients a test cannot go on without.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// chainCommittedSum waits up to 30 s for group's committed offsets on chain (the node's query, not
// a gateway's view) to add up to want, and says what they added up to if they never did.
func chainCommittedSum(n *node.Node, group string, want int) error {
	sum, err := -1, error(nil)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		r := n.CLI("", "query", "topics", "group-offsets", group, "-o", "json")
		if err = r.Err; err != nil {
			continue
		}
		var res struct {
			Offsets []struct {
				Committed struct {
					Offset string `json:"offset"`
				} `json:"committed"`
			} `json:"offsets"`
		}
		if err = json.Unmarshal([]byte(r.Stdout), &res); err != nil {
			continue
		}
		sum = 0
		for _, o := range res.Offsets {
			v, perr := strconv.Atoi(o.Committed.Offset)
			if perr != nil {
				return perr
			}
			sum += v
		}
		if sum == want {
			return nil
		}
	}
	return fmt.Errorf("committed offsets of %s on chain sum %d, want %d (%v)", group, sum, want, err)
}
