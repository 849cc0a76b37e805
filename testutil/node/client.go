package node

import (
	"os"
	"sync"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/client/tx"
	"github.com/cosmos/cosmos-sdk/crypto/keyring"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"

	dbm "github.com/cosmos/cosmos-db"

	"cosmossdk.io/log"

	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
)

// ClientContext returns a Go client for this node that signs as key from keyHome's test
// keyring (a node home), for tests that drive the chain through the Go clients.
func (n *Node) ClientContext(keyHome, key string) (client.Context, *txclient.Signer) {
	n.t.Helper()
	enc := encoding(n.t)
	disk, err := keyring.New("bftlog", keyring.BackendTest, keyHome, nil, enc.AppCodec())
	if err != nil {
		n.t.Fatal(err)
	}
	// Sign from memory: the file keyring reads and decrypts the key for every signature, which
	// would make the client, not the chain, the bottleneck of a load test.
	armor, err := disk.ExportPrivKeyArmor(key, "bench")
	if err != nil {
		n.t.Fatal(err)
	}
	kr := keyring.NewInMemory(enc.AppCodec())
	if err := kr.ImportPrivKey(key, armor, "bench"); err != nil {
		n.t.Fatal(err)
	}
	rec, err := kr.Key(key)
	if err != nil {
		n.t.Fatal(err)
	}
	addr, err := rec.GetAddress()
	if err != nil {
		n.t.Fatal(err)
	}
	rpc, err := rpchttp.New(n.RPC, "/websocket")
	if err != nil {
		n.t.Fatal(err)
	}
	ctx := client.Context{}.
		WithCodec(enc.AppCodec()).
		WithInterfaceRegistry(enc.InterfaceRegistry()).
		WithTxConfig(enc.TxConfig()).
		WithLegacyAmino(enc.LegacyAmino()).
		WithAccountRetriever(authtypes.AccountRetriever{}).
		WithKeyring(kr).
		WithClient(rpc).
		WithNodeURI(n.RPC).
		WithChainID(ChainID).
		WithBroadcastMode(flags.BroadcastSync).
		WithFromName(key).
		WithFromAddress(addr)
	txf := tx.Factory{}.
		WithChainID(ChainID).
		WithKeybase(kr).
		WithTxConfig(enc.TxConfig()).
		WithAccountRetriever(authtypes.AccountRetriever{}).
		WithSignMode(signing.SignMode_SIGN_MODE_DIRECT)
	s, err := txclient.NewSigner(ctx, txf, true)
	if err != nil {
		n.t.Fatal(err)
	}
	return ctx, s
}

// MustClientCtx is a read-only Go client for this node (queries and tx decoding), signing as
// nobody.
func (n *Node) MustClientCtx() client.Context {
	n.t.Helper()
	enc := encoding(n.t)
	rpc, err := rpchttp.New(n.RPC, "/websocket")
	if err != nil {
		n.t.Fatal(err)
	}
	return client.Context{}.
		WithCodec(enc.AppCodec()).
		WithInterfaceRegistry(enc.InterfaceRegistry()).
		WithTxConfig(enc.TxConfig()).
		WithClient(rpc).
		WithNodeURI(n.RPC).
		WithChainID(ChainID)
}

var (
	encOnce sync.Once
	encApp  *app.App
)

// encoding returns an app instance built once per process, used only for its codecs and tx
// config: building the app for every client would repeat the whole depinject wiring.
func encoding(t T) *app.App {
	encOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bftlog-enc-")
		if err != nil {
			t.Fatal(err)
		}
		encApp = app.New(log.NewNopLogger(), dbm.NewMemDB(), nil, true, simtestutil.NewAppOptionsWithFlagHome(dir))
	})
	return encApp
}
