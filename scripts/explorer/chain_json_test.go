// Package explorer holds the ping.pub chain JSON of `make localnet`; its test checks the file
// against the chain's code (tests/e2e checks it against a running node).
package explorer

import (
	"encoding/json"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/client/flags"

	"github.com/bftlog/bftlog/x/topics/types"
)

// chainJSON is the part of ping.pub's LocalChainConfig (src/types/chaindata.ts) checked here.
type chainJSON struct {
	MinTxFee       string   `json:"min_tx_fee"`
	Logo           string   `json:"logo"`
	Features       []string `json:"features"`
	KeplrPriceStep struct {
		Low, Average, High float64
	} `json:"keplr_price_step"`
	Assets []struct {
		Base string `json:"base"`
		Logo string `json:"logo"`
	} `json:"assets"`
}

// pingPubPages are the menu names (route meta i18n) of ping.pub's chain pages; "features" lists
// the ones shown. IBC and CosmWasm read modules bftlog does not have (their routes answer 501);
// the widget page tells how to embed ping.pub's wallet widget in another site.
var (
	pingPubPages = []string{"dashboard", "blocks", "tx", "staking", "governance", "uptime", "supply",
		"parameters", "consensus", "state-sync", "widget", "ibc", "cosmwasm"}
	unsupported = []string{"ibc", "cosmwasm", "widget"}
)

func TestPingPubChainJSON(t *testing.T) {
	bz, err := os.ReadFile("bftlog-local.json")
	require.NoError(t, err)
	var chain chainJSON
	require.NoError(t, json.Unmarshal(bz, &chain))

	// Without "features" ping.pub shows every page, IBC and CosmWasm included.
	require.NotEmpty(t, chain.Features)
	for _, f := range chain.Features {
		require.Contains(t, pingPubPages, f, "not a ping.pub page")
		require.NotContains(t, unsupported, f)
	}
	require.Subset(t, chain.Features, []string{"dashboard", "blocks", "tx", "staking", "governance", "parameters"})

	// min_tx_fee is a whole fee in the base denom (ping.pub's own files: 800 uatom on the Hub):
	// the chain's fee rule (app/fees.go) at the CLI's default gas limit; Keplr's gas price steps
	// start at min_gas_price.
	price := types.DefaultParams().MinGasPrice
	require.True(t, price.IsPositive(), "the chain charges a fee")
	require.Equal(t, price.Denom, chain.Assets[0].Base)
	want := math.LegacyNewDec(flags.DefaultGasLimit).Mul(price.Amount).Ceil().TruncateInt()
	require.Equal(t, want.String(), chain.MinTxFee, "min_tx_fee = %d gas x %s", flags.DefaultGasLimit, price)
	low, err := math.LegacyNewDecFromStr(strconv.FormatFloat(chain.KeplrPriceStep.Low, 'f', -1, 64))
	require.NoError(t, err)
	require.True(t, low.Equal(price.Amount), "keplr_price_step.low %s, min_gas_price %s", low, price.Amount)
	require.True(t, chain.KeplrPriceStep.Low <= chain.KeplrPriceStep.Average && chain.KeplrPriceStep.Average <= chain.KeplrPriceStep.High)

	// The logo is logos/bftlog.svg, copied into the explorer's public/logos/ and so served by the
	// explorer itself, whatever its origin (docs/explorers.md). ping.pub's Content-Security-Policy
	// takes images from its own origin, data: and https: only (not the node's
	// http://127.0.0.1:1317), and it turns a chain logo that does not start with "http" into a URL
	// on https://ping.pub. "http:/logos/bftlog.svg" starts with "http" and, on a page served over
	// http, is a URL relative to the page's origin (WHATWG URL: a special scheme equal to the
	// base's and one slash); an asset logo is taken as is, so there the plain path.
	for _, a := range chain.Assets {
		require.Equal(t, "/logos/bftlog.svg", a.Logo, a.Base)
	}
	require.Equal(t, "http:"+chain.Assets[0].Logo, chain.Logo)
	// No host: a browser resolves it against the page (tests/e2e checks it in Chromium, served
	// on a port of its own); Go's RFC 3986 parser keeps it as it is.
	logo, err := url.Parse(chain.Logo)
	require.NoError(t, err)
	require.Equal(t, url.URL{Scheme: "http", Path: chain.Assets[0].Logo, OmitHost: true}, *logo)
	svg, err := os.ReadFile(strings.TrimPrefix(chain.Assets[0].Logo, "/"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(svg), "<svg xmlns=\"http://www.w3.org/2000/svg\""), "an SVG file")
}
