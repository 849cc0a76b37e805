package node

import (
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cometbft/cometbft/crypto/ed25519"
	cmtjson "github.com/cometbft/cometbft/libs/json"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/privval"
)

// useRemoteSigner takes the node's consensus key out of its home and signs its votes and
// proposals from this test process instead, over CometBFT's remote-signer protocol (the node
// listens on priv_validator_laddr, the signer dials it), as a validator whose key sits in an
// HSM or a KMS does. The node keeps no priv_validator_key.json: the app cannot sign with the
// consensus key, only with a data-plane key registered on chain. The signer dials again after
// the node restarts, for up to a minute each time, until the test ends.
func (n *Node) useRemoteSigner() {
	t := n.t
	t.Helper()
	dir := t.TempDir()
	keyFile, stateFile := filepath.Join(dir, "priv_validator_key.json"), filepath.Join(dir, "priv_validator_state.json")
	for from, to := range map[string]string{
		filepath.Join(n.Home, "config", "priv_validator_key.json"): keyFile,
		filepath.Join(n.Home, "data", "priv_validator_state.json"): stateFile,
	} {
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
	addr := n.addr() + ":" + strconv.Itoa(FreePort(t))
	setConfig(t, n.Home, `priv_validator_laddr = ""`, `priv_validator_laddr = "tcp://`+addr+`"`)
	n.keyFile = keyFile
	pv := privval.LoadFilePV(keyFile, stateFile)
	// CometBFT's dialer retries without looking at Stop: once the test ends it dials nothing
	// (so it cannot reach another test's node on a reused port) and gives up within a minute.
	var stopped atomic.Bool
	dial := privval.DialTCPFn(addr, 5*time.Second, ed25519.GenPrivKey())
	dialer := func() (net.Conn, error) {
		if stopped.Load() {
			return nil, errors.New("the test ended")
		}
		return dial()
	}
	endpoint := privval.NewSignerDialerEndpoint(cmtlog.NewNopLogger(), dialer,
		privval.SignerDialerEndpointConnRetries(600), privval.SignerDialerEndpointRetryWaitInterval(100*time.Millisecond))
	signer := privval.NewSignerServer(endpoint, ChainID, pv)
	if err := signer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopped.Store(true); _ = signer.Stop() })
}

// ConsensusAddress is the node's validator's consensus address (upper-case hex), as CometBFT and
// the data plane name it, wherever its key is kept.
func (n *Node) ConsensusAddress() string {
	n.t.Helper()
	file := n.keyFile
	if file == "" {
		file = filepath.Join(n.Home, "config", "priv_validator_key.json")
	}
	bz, err := os.ReadFile(file)
	if err != nil {
		n.t.Fatal(err)
	}
	var key privval.FilePVKey
	if err := cmtjson.Unmarshal(bz, &key); err != nil {
		n.t.Fatalf("%s: %v", file, err)
	}
	return strings.ToUpper(hex.EncodeToString(key.PubKey.Address()))
}
