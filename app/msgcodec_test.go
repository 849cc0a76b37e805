package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"

	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"
	authsigning "github.com/cosmos/cosmos-sdk/x/auth/signing"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/testutil/sample"
)

// TestEveryMessageEncodes is what explorers and Ledger users rely on: every bftlog message the
// app registers has a sample here, renders in amino JSON under its amino name (legacy codec and
// the SIGN_MODE_LEGACY_AMINO_JSON sign bytes), and round-trips through proto JSON (the form of
// /cosmos/tx/v1beta1/txs/{hash}).
func TestEveryMessageEncodes(t *testing.T) {
	a := app.New(log.NewNopLogger(), dbm.NewMemDB(), nil, true,
		simtestutil.NewAppOptionsWithFlagHome(t.TempDir()))
	gov := authtypes.NewModuleAddress(govtypes.ModuleName).String()
	samples := sample.Messages(gov)

	var registered []string
	for _, url := range a.InterfaceRegistry().ListImplementations(sdk.MsgInterfaceProtoName) {
		// MsgOrderedTx stands in blocks for transactions (app/ordering.go); nobody signs it, so
		// it has no amino name (TestAttackProposalNamingTransactionsNobodyHolds decodes it).
		if strings.HasPrefix(url, "/bftlog.") && url != "/bftlog.ordering.v1.MsgOrderedTx" {
			registered = append(registered, url)
		}
	}
	require.NotEmpty(t, registered)
	byURL := map[string]sdk.Msg{}
	for _, m := range samples {
		byURL[sdk.MsgTypeURL(m)] = m
	}
	for _, url := range registered {
		require.Contains(t, byURL, url, "no sample for %s: add it to testutil/sample", url)
	}
	require.Len(t, byURL, len(registered), "a sample is not a registered message")

	priv := secp256k1.GenPrivKey()
	for _, msg := range samples {
		url := sdk.MsgTypeURL(msg)
		t.Run(url, func(t *testing.T) {
			// Amino names are "bftlog/<module>/<Msg>"; the legacy codec and the proto option agree.
			parts := strings.Split(strings.TrimPrefix(url, "/"), ".") // bftlog topics v1 MsgX
			aminoName := "bftlog/" + parts[1] + "/" + parts[3]
			bz, err := a.LegacyAmino().MarshalJSON(msg)
			require.NoError(t, err)
			var typed struct {
				Type  string          `json:"type"`
				Value json.RawMessage `json:"value"`
			}
			require.NoError(t, json.Unmarshal(bz, &typed))
			require.Equal(t, aminoName, typed.Type)

			builder := a.TxConfig().NewTxBuilder()
			require.NoError(t, builder.SetMsgs(msg))
			builder.SetGasLimit(200000)
			signBytes, err := authsigning.GetSignBytesAdapter(context.Background(), a.TxConfig().SignModeHandler(),
				signing.SignMode_SIGN_MODE_LEGACY_AMINO_JSON, authsigning.SignerData{
					Address: gov, ChainID: "bftlog-test", AccountNumber: 7, Sequence: 3, PubKey: priv.PubKey(),
				}, builder.GetTx())
			require.NoError(t, err)
			require.Contains(t, string(signBytes), `"type":"`+aminoName+`"`)

			pj, err := a.AppCodec().MarshalInterfaceJSON(msg)
			require.NoError(t, err)
			require.Contains(t, string(pj), `"@type":"`+url+`"`)
			var back sdk.Msg
			require.NoError(t, a.AppCodec().UnmarshalInterfaceJSON(pj, &back))
			require.Equal(t, msg, back)
		})
	}
}
