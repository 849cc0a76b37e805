package e2e

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
)

// H1, as a new user first met it on a one-validator chain: alice's gateway serves a `kcat -G hg`
// consumer, the consumer is killed (kill -9, as a crashed service is) and alice deletes her
// group. The delete used to be accepted and leave the group's Kafka member behind; when its
// session ended, the EndBlocker failed ("group "hg" does not exist") and every validator halted
// for good. Now the delete is refused while the Kafka member lives (code 27), accepted once its
// session has ended, and the chain goes on; an admin who does not want to wait removes the
// crashed consumer's account first.
func TestAttackDeletingTheGroupOfACrashedKafkaConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and kcat")
	}
	kcat, err := exec.LookPath("kcat")
	require.NoError(t, err, "kcat is needed (apt-get install kcat; .ci/run installs it)")
	n := node.StartSingle(t, "alice")
	gw := startGateway(t, n, "alice")
	createTopic(n, "alice", "hg-events", 2)
	n.MustCLI("", "tx", "topics", "produce", "hg-events", "e1", "e2", "e3", "--from", "alice")

	// crashConsumer runs kcat's balanced consumer in group until it has read a record, then
	// kills it with SIGKILL: its member stays on chain until its session (6 s) ends.
	crashConsumer := func(group string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, kcat, "-b", gw.Addr(), "-G", group, "hg-events", "-X", "auto.offset.reset=earliest",
			"-X", "session.timeout.ms=6000", "-f", "%s\n", "-q", "-u")
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(out).ReadString('\n')
		require.NoError(t, err, "kcat -G %s read nothing: %s", group, stderr.String())
		require.True(t, strings.HasPrefix(line, "e"), line)
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		kg := n.MustCLI("", "query", "topics", "kafka-group", group, "-o", "json")
		require.Regexp(t, `"members":\s*\[\s*\{`, kg, "the killed consumer is still a member")
	}

	crashConsumer("hg")
	code, log := groupTx(t, n, "alice", "delete-group", "hg")
	require.Equal(t, uint32(27), code, "deleting a group whose Kafka member lives is refused: %s", log)
	require.Contains(t, log, "Kafka members")
	t.Logf("delete while the crashed consumer's session lives: code %d: %s", code, log)

	// Its session ends (6 s after the gateway last heard from it), the EndBlocker expires it,
	// and the delete goes through.
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, log = groupTx(t, n, "alice", "delete-group", "hg")
		if code == 0 {
			break
		}
		require.Equal(t, uint32(27), code, "only 'not empty' until the session ends: %s", log)
		require.True(t, time.Now().Before(deadline), "the member never expired: %s", log)
		time.Sleep(time.Second)
	}
	deleted, err := n.Height()
	require.NoError(t, err)

	// The admin's way without waiting: remove the account of the crashed consumer's member.
	crashConsumer("hg2")
	code, log = groupTx(t, n, "alice", "remove-group-member", "hg2", n.Address("alice"))
	require.Zero(t, code, log)
	code, log = groupTx(t, n, "alice", "delete-group", "hg2")
	require.Zero(t, code, log)

	// The chain goes on past the sessions' ends and the blocks that followed the deletes.
	require.NoError(t, n.WaitForHeight(deleted+40, 90*time.Second), "the chain stopped after the group was deleted")
	require.NotContains(t, n.Log(), "CONSENSUS FAILURE")
	require.NotContains(t, n.Log(), "block work skipped")
	groups := n.MustCLI("", "query", "topics", "groups", "-o", "json")
	require.NotContains(t, groups, `"hg"`)
	require.NotContains(t, groups, `"hg2"`)
	t.Logf("deleted at height %d after the session ended; the chain reached height %d with no halt and no skipped work", deleted, deleted+40)
}
