package app

import (
	abci "github.com/cometbft/cometbft/abci/types"
)

// OfferSnapshot hands the record snapshot extension the app hash CometBFT's light client
// verified for the offered snapshot, before the SDK's restore begins: the extension checks the
// restored multistore against it before it writes any record bytes
// (x/topics/keeper/record_snapshot.go). CometBFT itself checks the app hash only once every
// chunk is applied.
func (app *App) OfferSnapshot(req *abci.RequestOfferSnapshot) (*abci.ResponseOfferSnapshot, error) {
	if app.recordSnapshots != nil && req.Snapshot != nil {
		app.recordSnapshots.ExpectAppHash(req.Snapshot.Height, req.AppHash)
	}
	return app.App.OfferSnapshot(req)
}
