package e2e

import (
	"bytes"
	"encoding/base64"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/testutil/node"
)

// TestAttackFloodOfInvalidTransactions sends 10,000 malformed, truncated and badly signed
// transactions to a running node's ingress: the node keeps making blocks and answering, none of
// them reaches state, and a valid produce still works afterwards.
func TestAttackFloodOfInvalidTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	createTopic(n, "alice", "flood", 2)
	before := watermarks(t, n, "flood")
	acct := n.MustCLI("", "query", "auth", "account", n.Address("alice"), "-o", "json")

	// One real signed transaction (a bank send), to corrupt.
	dir := t.TempDir()
	unsigned := n.MustCLI("", "tx", "bank", "send", "alice", n.Address("alice"), "1stake", "--generate-only", "--gas", "300000")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "unsigned.json"), []byte(lastLine(unsigned)), 0o644))
	signed := n.MustCLI("", "tx", "sign", filepath.Join(dir, "unsigned.json"), "--from", "alice")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "signed.json"), []byte(signed), 0o644))
	encoded := strings.TrimSpace(n.MustRun("tx", "encode", filepath.Join(dir, "signed.json")))
	good, err := base64.StdEncoding.DecodeString(encoded)
	require.NoError(t, err)

	rng := rand.New(rand.NewSource(42))
	payloads := make([][]byte, 10_000)
	for i := range payloads {
		switch i % 4 {
		case 0: // random bytes
			b := make([]byte, 1+rng.Intn(2048))
			rng.Read(b)
			payloads[i] = b
		case 1: // truncated real transaction
			payloads[i] = good[:rng.Intn(len(good))]
		case 2: // real transaction with one byte flipped (signature, body or fee)
			b := bytes.Clone(good)
			b[rng.Intn(len(b))] ^= byte(1 + rng.Intn(255))
			payloads[i] = b
		default: // real transaction with garbage appended
			b := append(bytes.Clone(good), byte(rng.Intn(256)))
			payloads[i] = b
		}
	}
	var accepted, rejected, failed atomic.Int64
	var wg sync.WaitGroup
	work := make(chan []byte)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				resp, err := http.Post(n.API+app.RawTxPath, "application/octet-stream", bytes.NewReader(p))
				if err != nil {
					failed.Add(1)
					continue
				}
				var out app.RawTxResponse
				if resp.StatusCode == http.StatusOK && jsonDecode(resp, &out) == nil && out.Code == 0 {
					accepted.Add(1)
				} else {
					rejected.Add(1)
				}
				resp.Body.Close()
			}
		}()
	}
	start, err := n.Height()
	require.NoError(t, err)
	began := time.Now()
	for _, p := range payloads {
		work <- p
	}
	close(work)
	wg.Wait()
	t.Logf("flood: %d sent in %s, %d rejected, %d accepted into the mempool, %d transport errors",
		len(payloads), time.Since(began).Round(time.Millisecond), rejected.Load(), accepted.Load(), failed.Load())
	require.Zero(t, failed.Load(), "the node kept answering")

	// Still alive and making blocks; nothing of the flood reached state.
	require.NoError(t, n.WaitForHeight(start+3, 30*time.Second))
	require.Equal(t, before, watermarks(t, n, "flood"))
	require.Equal(t, acct, n.MustCLI("", "query", "auth", "account", n.Address("alice"), "-o", "json"), "no flood tx used alice's sequence")
	out := n.MustCLI("", "tx", "topics", "produce", "flood", "after the flood", "--from", "alice")
	require.Contains(t, out, "offsets 0-0")
}
