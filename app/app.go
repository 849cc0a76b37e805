// Package app wires the bftlog application together using depinject
// (see app_config.go for the module configuration).
package app

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	dbm "github.com/cosmos/cosmos-db"
	"github.com/spf13/cast"

	clienthelpers "cosmossdk.io/client/v2/helpers"
	"cosmossdk.io/depinject"
	"cosmossdk.io/log"
	storetypes "cosmossdk.io/store/types"
	evidencekeeper "cosmossdk.io/x/evidence/keeper"
	upgradekeeper "cosmossdk.io/x/upgrade/keeper"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	"github.com/cosmos/cosmos-sdk/runtime"
	"github.com/cosmos/cosmos-sdk/server"
	"github.com/cosmos/cosmos-sdk/server/api"
	"github.com/cosmos/cosmos-sdk/server/config"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authkeeper "github.com/cosmos/cosmos-sdk/x/auth/keeper"
	bankkeeper "github.com/cosmos/cosmos-sdk/x/bank/keeper"
	consensuskeeper "github.com/cosmos/cosmos-sdk/x/consensus/keeper"
	distrkeeper "github.com/cosmos/cosmos-sdk/x/distribution/keeper"
	govkeeper "github.com/cosmos/cosmos-sdk/x/gov/keeper"
	slashingkeeper "github.com/cosmos/cosmos-sdk/x/slashing/keeper"
	stakingkeeper "github.com/cosmos/cosmos-sdk/x/staking/keeper"

	"github.com/bftlog/bftlog/x/poa"
	poakeeper "github.com/bftlog/bftlog/x/poa/keeper"
	"github.com/bftlog/bftlog/x/topics/client/console"
	topicsdocs "github.com/bftlog/bftlog/x/topics/client/docs"
	topicskeeper "github.com/bftlog/bftlog/x/topics/keeper"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// DefaultNodeHome is the default home directory of bftlogd (~/.bftlogd,
// or the value of --home if given on the command line).
var DefaultNodeHome string

var _ servertypes.Application = (*App)(nil)

// App is the bftlog application. It embeds the runtime.App (which embeds
// baseapp.BaseApp) and exposes the module keepers.
type App struct {
	*runtime.App

	recentResults     *recentResults
	proposalTxs       *proposalTxs                    // ProcessProposal's decoded transactions, for FinalizeBlock
	pool              *txPool                         // admitted transactions by hash, for blocks that name them (ordering.go)
	orderByDigest     bool                            // this node's proposals name pooled transactions
	peersFromChain    bool                            // the data plane's peers are the validators' endpoints on chain
	fallbackPeers     []string                        // asked for what this node lacks while no endpoint is set
	push              *txPush                         // sends its clients' transactions to the peers once (push.go)
	dataPlaneAddress  string                          // ordering.listen-address: the data plane's own listener (dataplane_listener.go)
	byz               *byzantine                      // nil but in the e2e harness's faulty validator (byzantine.go, -tags byzantine)
	sigsReused        atomic.Int64                    // executions that reused CheckTx's signature check (verified.go)
	maxTxBytes        int                             // CometBFT's mempool.max_tx_bytes, which a stub's transaction must respect (stub.go)
	recordSnapshots   *topicskeeper.RecordSnapshotter // nil without segment files or snapshots
	legacyAmino       *codec.LegacyAmino
	appCodec          codec.Codec
	txConfig          client.TxConfig
	interfaceRegistry codectypes.InterfaceRegistry

	// keepers
	AccountKeeper         authkeeper.AccountKeeper
	BankKeeper            bankkeeper.Keeper
	StakingKeeper         *stakingkeeper.Keeper
	SlashingKeeper        slashingkeeper.Keeper
	DistrKeeper           distrkeeper.Keeper
	GovKeeper             *govkeeper.Keeper
	ConsensusParamsKeeper consensuskeeper.Keeper
	UpgradeKeeper         *upgradekeeper.Keeper
	EvidenceKeeper        evidencekeeper.Keeper
	TopicsKeeper          topicskeeper.Keeper
	PoaKeeper             poakeeper.Keeper
}

func init() {
	var err error
	DefaultNodeHome, err = clienthelpers.GetNodeHomeDirectory(".bftlogd")
	if err != nil {
		panic(err)
	}

	SetAddressPrefixes()
}

// SetAddressPrefixes sets the bech32 prefixes in the global SDK config (still
// used by sdk.AccAddress.String() & co). It is called from this package's
// init, so anything importing package app (bftlogd, tests) gets bftlog1...
// addresses. It is a no-op if the config was already sealed with our prefixes.
func SetAddressPrefixes() {
	cfg := sdk.GetConfig()
	if cfg.GetBech32AccountAddrPrefix() == Bech32PrefixAccAddr &&
		cfg.GetBech32ValidatorAddrPrefix() == Bech32PrefixValAddr &&
		cfg.GetBech32ConsensusAddrPrefix() == Bech32PrefixConsAddr {
		return
	}
	cfg.SetBech32PrefixForAccount(Bech32PrefixAccAddr, Bech32PrefixAccPub)
	cfg.SetBech32PrefixForValidator(Bech32PrefixValAddr, Bech32PrefixValPub)
	cfg.SetBech32PrefixForConsensusNode(Bech32PrefixConsAddr, Bech32PrefixConsPub)
}

// New returns a fully initialised bftlog App.
func New(
	logger log.Logger,
	db dbm.DB,
	traceStore io.Writer,
	loadLatest bool,
	appOpts servertypes.AppOptions,
	baseAppOptions ...func(*baseapp.BaseApp),
) *App {
	var (
		app        = &App{}
		appBuilder *runtime.AppBuilder
		// Record batch bytes live outside IAVL (x/topics/keeper/record_store.go): in the
		// application database under their own prefix, a block's writes in a transient store
		// until x/topics' Precommit.
		pendingRecords = storetypes.NewTransientStoreKey(topicstypes.PendingRecordsStoreKey)
		recordStore    = newRecordStore(pendingRecords, db, appOpts)
	)

	if err := depinject.Inject(
		depinject.Configs(
			AppConfig,
			depinject.Supply(
				appOpts, // used e.g. by x/upgrade (skip heights, home dir)
				logger,
				&recordStore,
			),
		),
		&appBuilder,
		&app.appCodec,
		&app.legacyAmino,
		&app.txConfig,
		&app.interfaceRegistry,
		&app.AccountKeeper,
		&app.BankKeeper,
		&app.StakingKeeper,
		&app.SlashingKeeper,
		&app.DistrKeeper,
		&app.GovKeeper,
		&app.ConsensusParamsKeeper,
		&app.UpgradeKeeper,
		&app.EvidenceKeeper,
		&app.TopicsKeeper,
		&app.PoaKeeper,
	); err != nil {
		panic(err)
	}

	// The standard ante handler (fees, signatures, sequences, gas) and post handler are
	// installed by the "tx" module of AppConfig; the x/poa decorator runs in front of it so no
	// staking message gets around governance, then the consensus fee rule (fees.go), so a
	// transaction that pays too little is refused before anything is deducted or run.
	app.App = appBuilder.Build(db, traceStore, baseAppOptions...)
	app.MountStore(pendingRecords, storetypes.StoreTypeTransient)
	// Queries read committed record bytes only, never the block's pending ones.
	app.SetQueryMultiStore(recordStore.QueryMultiStore(app.CommitMultiStore()))
	std := app.AnteHandler()
	poaCheck := poa.NewAnteDecorator(app.PoaKeeper)
	feeCheck := NewFeeDecorator(app.TopicsKeeper)
	withFee := func(ctx sdk.Context, tx sdk.Tx, simulate bool) (sdk.Context, error) {
		return feeCheck.AnteHandle(ctx, tx, simulate, std)
	}
	app.SetAnteHandler(func(ctx sdk.Context, tx sdk.Tx, simulate bool) (sdk.Context, error) {
		return poaCheck.AnteHandle(app.skipVerified(app.checkHeight(ctx), tx, simulate), tx, simulate, withFee)
	})
	// Proposals carrying transactions that break the fee rule are voted down (process_proposal.go); the
	// transactions decoded for that are reused by FinalizeBlock (decode_cache.go).
	app.proposalTxs = newProposalTxs(app.txConfig.TxDecoder())
	app.SetTxDecoder(app.proposalTxs.Decode)
	app.SetProcessProposal(app.processProposal)
	// Proposals keep each account's transactions in sequence (proposal.go).
	app.SetPrepareProposal(app.prepareProposal)
	// Blocks may name transactions the validators hold instead of carrying them (ordering.go).
	pool, err := newOrderingPool(appOpts, logger)
	if err != nil {
		panic(err)
	}
	app.pool = pool
	app.proposalTxs.held = pool.decodedOf
	app.orderByDigest = cast.ToBool(appOpts.Get(FlagOrderByDigest))
	// Ordering by digest sends what this node's clients give it to the peers itself (push.go).
	app.push = newTxPush(PushPeers(appOpts), pool, logger)
	// Without ordering.peers, the peers are the other validators' endpoints on chain
	// (x/poa MsgSetDataPlaneEndpoint), read after each commit; until one is set, fetches go to
	// the persistent peers' hosts and nothing is pushed.
	if app.orderByDigest && len(orderingPeers(appOpts.Get(FlagOrderingPeers))) == 0 {
		app.peersFromChain, app.fallbackPeers = true, pool.peerList()
	}
	app.push.lastHeight = app.LastBlockHeight
	app.push.mempoolTx = app.stageTx
	// Data-plane requests are signed with this node's consensus key and checked against the
	// chain's validators (dataplane_keys.go), read again after each commit.
	key, err := loadValidatorKey(appOpts)
	if err != nil {
		panic(err)
	}
	pool.keys.useKey(key)
	app.dataPlaneAddress = cast.ToString(appOpts.Get(FlagOrderingListen))
	app.byz = newByzantine(app)
	app.push.byz, app.pool.byz = app.byz, app.byz
	app.byz.start()
	// With stubs in the mempool (stub.go) the pool holds what CometBFT's limits bounded.
	app.maxTxBytes = mempoolLimit(appOpts, "mempool.max_tx_bytes", 1<<20)
	pool.clientBytes = min(mempoolLimit(appOpts, "mempool.max_txs_bytes", 1<<30), maxPoolMemBytes/2)

	// register streaming services (ABCI listeners configured in app.toml)
	if err := app.RegisterStreamingServices(appOpts, app.kvStoreKeys()); err != nil {
		panic(err)
	}
	app.registerTopicsMetrics(appOpts)
	// Committed transactions' results for the ingress (results.go).
	app.recentResults = newRecentResults()
	app.recentResults.hash = app.pool.hashOf
	sm := app.StreamingManager()
	sm.ABCIListeners = append(slices.Clip(sm.ABCIListeners), app.recentResults)
	app.SetStreamingManager(sm)

	// State sync snapshots carry the record bytes, kept outside the multistore, as an
	// extension (x/topics/keeper/record_snapshot.go).
	if sm := app.SnapshotManager(); sm != nil {
		recordStore.SnapshotEvery(cast.ToUint64(appOpts.Get(server.FlagStateSyncSnapshotInterval)))
		if ext := app.TopicsKeeper.RecordSnapshotter(app.CommitMultiStore()); ext != nil {
			if err := sm.RegisterExtensions(ext); err != nil {
				panic(err)
			}
			app.recordSnapshots = ext
		}
	}

	app.registerUpgradeHandlers()

	if err := app.Load(loadLatest); err != nil {
		panic(err)
	}
	// Not at height 0: a read there would leave empty answers in the stores' inter-block cache,
	// which a state sync's restore (written beneath it) never clears; staking then read no bond
	// denom and the synced node panicked (TestStateSyncJoinsWithTheLog). The first commit reads it.
	if loadLatest && app.LastBlockHeight() > 0 {
		app.refreshDataPlaneKeys()
	}

	return app
}

// newRecordStore keeps record batch bytes in segment files under <home>/data/records, their
// positions in the application database; a node without a home (an in-memory test chain)
// keeps the bytes in the database.
func newRecordStore(pending *storetypes.TransientStoreKey, db dbm.DB, appOpts servertypes.AppOptions) topicskeeper.RecordStore {
	index := dbm.NewPrefixDB(db, []byte(topicstypes.RecordDBPrefix))
	home := cast.ToString(appOpts.Get(flags.FlagHome))
	if home == "" {
		return topicskeeper.NewDBRecordStore(pending, index)
	}
	return topicskeeper.NewRecordStore(pending, index, filepath.Join(home, "data", "records"))
}

// The [ordering] section of app.toml (ordering.go).
const (
	FlagOrderByDigest      = "ordering.by-digest"
	FlagOrderingPeers      = "ordering.peers"
	FlagOrderingKeepBlocks = "ordering.keep-heights"
	FlagOrderingKeepBytes  = "ordering.keep-bytes"
	FlagOrderingListen     = "ordering.listen-address" // the data plane's own listener (dataplane_listener.go)
)

// A node keeps the transactions blocks named for as many heights as it keeps blocks
// (DefaultRetainBlocks), so a validator that was away catches up by block sync as far back
// as before, but at most DefaultOrderingKeepBytes of them, so the log's bytes are not kept a
// second time: past that window a node rejoins by state sync (docs/digest-ordering.md).
const (
	DefaultOrderingKeepHeights = DefaultRetainBlocks
	DefaultOrderingKeepBytes   = 4 << 30
)

// mempoolLimit is a mempool setting of config.toml, or CometBFT's default when unset (as in
// tests without a home).
func mempoolLimit(appOpts servertypes.AppOptions, key string, def int) int {
	if v := cast.ToInt(appOpts.Get(key)); v > 0 {
		return v
	}
	return def
}

// newOrderingPool is the node's pool, under <home>/data/pool (in memory without a home).
func newOrderingPool(appOpts servertypes.AppOptions, logger log.Logger) (*txPool, error) {
	var dir string
	if home := cast.ToString(appOpts.Get(flags.FlagHome)); home != "" {
		dir = filepath.Join(home, "data", "pool")
	}
	keep := cast.ToInt64(appOpts.Get(FlagOrderingKeepBlocks))
	if keep <= 0 {
		keep = DefaultOrderingKeepHeights
	}
	keepBytes := cast.ToInt64(appOpts.Get(FlagOrderingKeepBytes))
	if keepBytes <= 0 {
		keepBytes = DefaultOrderingKeepBytes
	}
	peers := orderingPeers(appOpts.Get(FlagOrderingPeers))
	if len(peers) == 0 {
		peers = peersFromPersistentPeers(cast.ToString(appOpts.Get("p2p.persistent_peers")), cast.ToString(appOpts.Get("api.address")))
	}
	return newTxPool(dir, peers, keep, keepBytes, logger)
}

// PushPeers are the API servers a node with ordering.by-digest on sends its clients'
// transactions to (push.go): ordering.peers as configured, never guessed from the persistent
// peers, since a node that pushes stops its mempool's gossip (cmd/bftlogd). A node that has none
// gossips, and its proposals name only what no peer needs (a single validator).
func PushPeers(appOpts servertypes.AppOptions) []string {
	if !cast.ToBool(appOpts.Get(FlagOrderByDigest)) {
		return nil
	}
	return orderingPeers(appOpts.Get(FlagOrderingPeers))
}

// peersFromPersistentPeers is ordering.peers when app.toml leaves it empty: the persistent
// peers' hosts (id@host:port,...) at this node's own API port, as a network whose nodes serve
// their API on one port needs nothing more.
func peersFromPersistentPeers(persistent, apiAddress string) []string {
	u, err := url.Parse(apiAddress)
	if err != nil || u.Port() == "" {
		return nil
	}
	var out []string
	for _, p := range strings.Split(persistent, ",") {
		p = strings.TrimSpace(p)
		if i := strings.LastIndex(p, "@"); i >= 0 {
			p = p[i+1:]
		}
		if host, _, err := net.SplitHostPort(p); err == nil && host != "" {
			out = append(out, "http://"+net.JoinHostPort(host, u.Port()))
		}
	}
	return out
}

// orderingPeers reads ordering.peers: a list in app.toml, or one string of URLs separated by
// commas or spaces (BFTLOGD_ORDERING_PEERS).
func orderingPeers(v any) []string {
	var out []string
	for _, s := range cast.ToStringSlice(v) {
		out = append(out, strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })...)
	}
	return out
}

// LegacyAmino returns the app's amino codec.
func (app *App) LegacyAmino() *codec.LegacyAmino {
	return app.legacyAmino
}

// AppCodec returns the app's (protobuf) codec.
func (app *App) AppCodec() codec.Codec {
	return app.appCodec
}

// InterfaceRegistry returns the app's interface registry.
func (app *App) InterfaceRegistry() codectypes.InterfaceRegistry {
	return app.interfaceRegistry
}

// TxConfig returns the app's TxConfig.
func (app *App) TxConfig() client.TxConfig {
	return app.txConfig
}

// GetKey returns the KVStoreKey for the provided store key name, or nil.
func (app *App) GetKey(storeKey string) *storetypes.KVStoreKey {
	kvStoreKey, ok := app.UnsafeFindStoreKey(storeKey).(*storetypes.KVStoreKey)
	if !ok {
		return nil
	}
	return kvStoreKey
}

func (app *App) kvStoreKeys() map[string]*storetypes.KVStoreKey {
	keys := make(map[string]*storetypes.KVStoreKey)
	for _, k := range app.GetStoreKeys() {
		if kv, ok := k.(*storetypes.KVStoreKey); ok {
			keys[kv.Name()] = kv
		}
	}
	return keys
}

// RegisterAPIRoutes registers all module REST (gRPC-gateway) routes with the
// API server, plus the swagger UI if enabled in app.toml (api.swagger).
func (app *App) RegisterAPIRoutes(apiSvr *api.Server, apiConfig config.APIConfig) {
	app.App.RegisterAPIRoutes(apiSvr, apiConfig)
	apiSvr.Router.Handle(RawTxPath, app.rawTxHandler(apiSvr.ClientCtx)).Methods(http.MethodPost)
	apiSvr.Router.Handle(RawTxResultPath, rawTxResultHandler(apiSvr.ClientCtx, app.recentResults)).Methods(http.MethodGet)
	apiSvr.Router.PathPrefix(PoolPath).HandlerFunc(app.pool.serve).Methods(http.MethodGet)
	apiSvr.Router.Handle(PushPath, app.push.handler(apiSvr.ClientCtx)).Methods(http.MethodPost)
	apiSvr.Router.HandleFunc(HeldPath, app.push.heldHandler).Methods(http.MethodPost)
	apiSvr.Router.Handle(NamedTxPath, namedTxHandler(apiSvr.ClientCtx, apiSvr.GRPCGatewayRouter, app.pool)).Methods(http.MethodGet)
	if _, err := app.serveDataPlane(app.dataPlaneAddress, apiSvr.ClientCtx); err != nil {
		panic(fmt.Errorf("%s %q: %w", FlagOrderingListen, app.dataPlaneAddress, err))
	}
	// The OpenAPI description of x/topics' REST routes (generated from the protos) and the
	// read-only topic console; both only read what the REST routes already serve.
	apiSvr.Router.Handle(topicsdocs.Path, topicsdocs.Handler())
	console.Register(apiSvr.Router)

	if err := server.RegisterSwaggerAPI(apiSvr.ClientCtx, apiSvr.Router, apiConfig.Swagger); err != nil {
		panic(err)
	}
}

// checkHeight gives CheckTx on a restarted node the height of its last block, as baseapp does
// after every commit. Until its first block after a restart, baseapp checks transactions on a
// header of height 0, which the SDK's ante handler takes for genesis: signatures are checked
// against account number 0 (every producer refused with "signature verification failed", sdk
// code 4), and neither the fee rule nor a gas limit applies. Only CheckTx on a chain past
// genesis: blocks run at their own height.
func (app *App) checkHeight(ctx sdk.Context) sdk.Context {
	if ctx.IsCheckTx() && ctx.BlockHeight() == 0 {
		if h := app.LastBlockHeight(); h > 0 {
			return ctx.WithBlockHeight(h)
		}
	}
	return ctx
}
