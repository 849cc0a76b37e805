// Package app wires the bftlog application together using depinject
// (see app_config.go for the module configuration).
package app

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sync/atomic"

	dbm "github.com/cosmos/cosmos-db"
	"github.com/spf13/cast"

	clienthelpers "cosmossdk.io/client/v2/helpers"
	"cosmossdk.io/depinject"
	"cosmossdk.io/log"
	storetypes "cosmossdk.io/store/types"
	evidencekeeper "cosmossdk.io/x/evidence/keeper"
	feegrantkeeper "cosmossdk.io/x/feegrant/keeper"
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
	authzkeeper "github.com/cosmos/cosmos-sdk/x/authz/keeper"
	bankkeeper "github.com/cosmos/cosmos-sdk/x/bank/keeper"
	consensuskeeper "github.com/cosmos/cosmos-sdk/x/consensus/keeper"
	distrkeeper "github.com/cosmos/cosmos-sdk/x/distribution/keeper"
	govkeeper "github.com/cosmos/cosmos-sdk/x/gov/keeper"
	slashingkeeper "github.com/cosmos/cosmos-sdk/x/slashing/keeper"
	stakingkeeper "github.com/cosmos/cosmos-sdk/x/staking/keeper"

	"github.com/bftlog/bftlog/app/dataplane"
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
	plane             *dataplane.Plane                // admitted transactions by hash, for blocks that name them (ordering.go); pushes and fetches
	orderByDigest     bool                            // this node's proposals name pooled transactions
	byz               *byzantine                      // nil but in the e2e harness's faulty validator (byzantine.go, -tags byzantine)
	sigsReused        atomic.Int64                    // executions that reused CheckTx's signature check (verified.go)
	maxTxBytes        int                             // CometBFT's mempool.max_tx_bytes, which a stub's transaction must respect (stub.go)
	recordSnapshots   *topicskeeper.RecordSnapshotter // nil without segment files or snapshots
	blockTxs          blockTxs                        // whether the block being finalized carries transactions (empty_blocks.go)
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
	AuthzKeeper           authzkeeper.Keeper
	FeeGrantKeeper        feegrantkeeper.Keeper
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
		&app.AuthzKeeper,
		&app.FeeGrantKeeper,
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
	// Blocks may name transactions the validators hold instead of carrying them (ordering.go),
	// which the data plane holds, sends to the peers once (ordering by digest) and fetches
	// (app/dataplane). Its requests are signed with this node's consensus key and checked
	// against the chain's validators, read again after each commit (dataplane.go).
	planeCfg := dataplane.ConfigFromAppOptions(appOpts)
	app.orderByDigest = planeCfg.ByDigest
	app.byz = newByzantine(app)
	plane, err := dataplane.New(planeCfg, planeHost{app}, app.byz.faults(), logger)
	if err != nil {
		panic(err)
	}
	app.plane = plane
	app.proposalTxs.held = plane.DecodedOf
	app.byz.start()
	// With stubs in the mempool (stub.go) the pool holds what CometBFT's limits bounded.
	app.maxTxBytes = planeCfg.MaxTxBytes

	// register streaming services (ABCI listeners configured in app.toml)
	if err := app.RegisterStreamingServices(appOpts, app.kvStoreKeys()); err != nil {
		panic(err)
	}
	app.registerTopicsMetrics(appOpts)
	// Committed transactions' results for the ingress (results.go).
	app.recentResults = newRecentResults()
	app.recentResults.hash = plane.HashOf
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

	app.quietEmptyBlocks()
	app.boundAuthzPruning()
	app.skipExpiredAtGenesis()
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

// DefaultGenesis is the modules' default genesis with bftlog's staking params: no historical
// info (WithoutHistoricalInfo).
func (app *App) DefaultGenesis() map[string]json.RawMessage {
	gen := app.App.DefaultGenesis()
	if err := WithoutHistoricalInfo(gen); err != nil {
		panic(err)
	}
	return gen
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
	apiSvr.Router.PathPrefix(PoolPath).Handler(app.plane.TxHandler()).Methods(http.MethodGet)
	apiSvr.Router.Handle(PushPath, app.plane.PushHandler(apiSvr.ClientCtx)).Methods(http.MethodPost)
	apiSvr.Router.Handle(HeldPath, app.plane.HeldHandler()).Methods(http.MethodPost)
	newExplorerView(apiSvr.ClientCtx, apiSvr.GRPCGatewayRouter, app.plane).register(apiSvr.Router)
	// The data plane's own listener, when ordering.listen-address sets one.
	if _, err := app.plane.Listen(apiSvr.ClientCtx, app.Logger()); err != nil {
		panic(err)
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
