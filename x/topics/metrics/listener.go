package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/cosmos/gogoproto/proto"

	errorsmod "cosmossdk.io/errors"
	"cosmossdk.io/log"
	storetypes "cosmossdk.io/store/types"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/authz"

	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/types"
)

var (
	batchAppendedType = proto.MessageName(&types.EventBatchAppended{})
	// msgProduceURL lets a failed transaction that cannot carry a MsgProduce skip decoding.
	msgProduceURL = []byte(sdk.MsgTypeURL(&types.MsgProduce{}))
)

// Source is one app the metrics describe.
type Source struct {
	// Keeper is the app's x/topics keeper: its query server reports reads, and lag is read
	// through it.
	Keeper keeper.Keeper
	// TxDecoder decodes the failed transactions of a block to find those carrying a MsgProduce;
	// nil counts no rejections.
	TxDecoder sdk.TxDecoder
	// State returns a read-only context on the latest committed state, e.g. from
	// BaseApp.CreateQueryContext(0, false); nil leaves group lag out.
	State func() (context.Context, error)
	// Logger reports what the metrics could not read; nil is silent.
	Logger log.Logger
}

// Bind makes src the app the metrics describe: it installs the keeper's FetchObserver and
// returns the ABCI listener to append to the app's streaming manager. A later Bind (another
// app in the same process, as in-process test networks build) takes over, and the hooks of the
// earlier app become no-ops, so no block or read is counted twice.
func (m *Metrics) Bind(src Source) storetypes.ABCIListener {
	if src.Logger == nil {
		src.Logger = log.NewNopLogger()
	}
	b := &binding{m: m, src: src}
	m.active.Store(b)
	src.Keeper.SetFetchObserver(b)
	return b
}

// binding is one app's hooks; only the latest bound one counts.
type binding struct {
	m   *Metrics
	src Source
}

var (
	_ storetypes.ABCIListener = (*binding)(nil)
	_ keeper.FetchObserver    = (*binding)(nil)
)

func (b *binding) live() bool { return b.m.active.Load() == b }

// ObserveFetch implements keeper.FetchObserver.
func (b *binding) ObserveFetch(records int) {
	if b.live() {
		b.m.fetchRequests.WithLabelValues("fetch").Inc()
		b.m.fetchRecords.WithLabelValues("fetch").Add(float64(records))
	}
}

// ObserveRecord implements keeper.FetchObserver.
func (b *binding) ObserveRecord() {
	if b.live() {
		b.m.fetchRequests.WithLabelValues("record").Inc()
		b.m.fetchRecords.WithLabelValues("record").Inc()
	}
}

// ListenFinalizeBlock counts a block's appends and produce rejections from its results. It
// runs after the block executed, in the consensus goroutine: it returns no error and recovers
// from panics so the metrics can never stop the node.
func (b *binding) ListenFinalizeBlock(_ context.Context, req abci.RequestFinalizeBlock, res abci.ResponseFinalizeBlock) error {
	if !b.live() {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			b.src.Logger.Error("x/topics metrics: block not counted", "height", req.Height, "panic", r)
		}
	}()
	b.m.observeBlock(req, res, b.src.TxDecoder)
	return nil
}

// ListenCommit implements storetypes.ABCIListener; the metrics need only FinalizeBlock.
func (*binding) ListenCommit(context.Context, abci.ResponseCommit, []*storetypes.StoreKVPair) error {
	return nil
}

// observeBlock reads EventBatchAppended from successful transactions (a failed transaction's
// message events are discarded by the SDK, so reverted appends never count) and from block
// events (messages of governance proposals run in EndBlock), and counts each failed
// transaction that carries a MsgProduce.
func (m *Metrics) observeBlock(req abci.RequestFinalizeBlock, res abci.ResponseFinalizeBlock, dec sdk.TxDecoder) {
	batches := 0
	count := func(events []abci.Event) {
		for _, e := range events {
			if e.Type != batchAppendedType {
				continue
			}
			topic, records, size, err := parseBatchAppended(e)
			if err != nil {
				continue
			}
			label := m.topicLabel(topic)
			m.recordsAppended.WithLabelValues(label).Add(float64(records))
			m.bytesAppended.WithLabelValues(label).Add(float64(size))
			batches++
		}
	}
	for i, tr := range res.TxResults {
		switch {
		case tr == nil:
		case tr.Code == 0:
			count(tr.Events)
		case i < len(req.Txs) && carriesProduce(dec, req.Txs[i]):
			m.produceRejections.WithLabelValues(tr.Codespace, strconv.FormatUint(uint64(tr.Code), 10), m.describe(tr.Codespace, tr.Code)).Inc()
		}
	}
	count(res.Events)
	m.batchesPerBlock.Observe(float64(batches))
}

// parseBatchAppended reads a typed event's attributes, whose values are JSON: strings quoted,
// uint64 quoted, uint32 bare.
func parseBatchAppended(e abci.Event) (topic string, records, size uint64, err error) {
	seen := 0
	for _, a := range e.Attributes {
		switch a.Key {
		case "topic":
			topic, err = strconv.Unquote(a.Value)
			seen++
		case "count":
			records, err = jsonUint(a.Value)
			seen++
		case "size_bytes":
			size, err = jsonUint(a.Value)
			seen++
		}
		if err != nil {
			return "", 0, 0, fmt.Errorf("%s.%s: %w", e.Type, a.Key, err)
		}
	}
	if seen != 3 {
		return "", 0, 0, fmt.Errorf("%s: missing attributes", e.Type)
	}
	return topic, records, size, nil
}

func jsonUint(v string) (uint64, error) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
}

// carriesProduce tells whether a transaction has a MsgProduce among its messages, or inside a
// grantee's MsgExec. Most failed transactions are ruled out by a byte search for the type URL,
// without decoding.
func carriesProduce(dec sdk.TxDecoder, txBytes []byte) bool {
	if dec == nil || !bytes.Contains(txBytes, msgProduceURL) {
		return false
	}
	tx, err := dec(txBytes)
	if err != nil {
		return false
	}
	return anyProduce(tx.GetMsgs(), 0)
}

// anyProduce tells whether msgs hold a MsgProduce, also inside a grantee's MsgExec (nested at
// most a few deep, as x/poa bounds them).
func anyProduce(msgs []sdk.Msg, depth int) bool {
	for _, msg := range msgs {
		switch m := msg.(type) {
		case *types.MsgProduce:
			return true
		case *authz.MsgExec:
			if inner, err := m.GetMessages(); err == nil && depth < 6 && anyProduce(inner, depth+1) {
				return true
			}
		}
	}
	return false
}

// describe is the registered error's description ("partition out of range", "out of gas"),
// or "unknown"; codes come from this app, so the label set stays small.
func (m *Metrics) describe(codespace string, code uint32) string {
	key := errorKey{codespace, code}
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.errors[key]; ok {
		return d
	}
	d := "unknown"
	var reg *errorsmod.Error
	if errors.As(errorsmod.ABCIError(codespace, code, ""), &reg) {
		d = reg.Error()
	}
	m.errors[key] = d
	return d
}
