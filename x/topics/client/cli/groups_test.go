package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/crypto/hd"
	"github.com/cosmos/cosmos-sdk/crypto/keyring"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	moduletestutil "github.com/cosmos/cosmos-sdk/types/module/testutil"

	"github.com/bftlog/bftlog/x/topics/types"
)

// groupCLI is a client context with alice, bob and carol in an in-memory keyring.
type groupCLI struct {
	ctx   client.Context
	addrs map[string]string
}

func newGroupCLI(t *testing.T) groupCLI {
	t.Helper()
	enc := moduletestutil.MakeTestEncodingConfig()
	types.RegisterInterfaces(enc.InterfaceRegistry)
	kr := keyring.NewInMemory(enc.Codec)
	g := groupCLI{addrs: map[string]string{}}
	for _, name := range []string{"alice", "bob", "carol"} {
		rec, _, err := kr.NewMnemonic(name, keyring.English, sdk.FullFundraiserPath, keyring.DefaultBIP39Passphrase, hd.Secp256k1)
		require.NoError(t, err)
		addr, err := rec.GetAddress()
		require.NoError(t, err)
		g.addrs[name] = addr.String()
	}
	g.ctx = client.Context{}.WithCodec(enc.Codec).WithInterfaceRegistry(enc.InterfaceRegistry).
		WithTxConfig(enc.TxConfig).WithKeyring(kr)
	return g
}

// run executes a group command with --generate-only and returns the message of the unsigned
// transaction it prints.
func (g groupCLI) run(t *testing.T, args ...string) (map[string]any, error) {
	t.Helper()
	return g.generate(t, []string{"--chain-id", "test"}, args...)
}

// generate runs a tx command as alice with --generate-only and more flags, and returns the
// message of the unsigned transaction it prints.
func (g groupCLI) generate(t *testing.T, more []string, args ...string) (map[string]any, error) {
	t.Helper()
	cmd := NewTxCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	ctx := g.ctx
	cmd.SetArgs(append(append(args, "--from", "alice", "--generate-only"), more...))
	if err := cmd.ExecuteContext(context.WithValue(context.Background(), client.ClientContextKey, &ctx)); err != nil {
		return nil, err
	}
	var tx struct {
		Body struct {
			Messages []map[string]any `json:"messages"`
		} `json:"body"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &tx), out.String())
	require.Len(t, tx.Body.Messages, 1, out.String())
	return tx.Body.Messages[0], nil
}

// --allowed-members takes key names and addresses, comma-separated or repeated (autocli's flag
// took only addresses, one per flag), and names the value it cannot resolve.
func TestGroupCommandsResolveAllowedMembers(t *testing.T) {
	g := newGroupCLI(t)

	msg, err := g.run(t, "create-group", "billing", "--join-policy", "allowlist", "--allowed-members", "bob")
	require.NoError(t, err)
	require.Equal(t, "/bftlog.topics.v1.MsgCreateGroup", msg["@type"])
	require.Equal(t, g.addrs["alice"], msg["admin"])
	require.Equal(t, "billing", msg["group_id"])
	require.Equal(t, "JOIN_POLICY_ALLOWLIST", msg["join_policy"])
	require.Equal(t, []any{g.addrs["bob"]}, msg["allowed_members"])

	// A comma list mixing a key name and an address, then the flag repeated.
	msg, err = g.run(t, "create-group", "billing", "--join-policy", "allowlist", "--assignor", "round-robin",
		"--session-timeout-ms", "45000", "--allowed-members", "bob,"+g.addrs["carol"], "--allowed-members", "alice")
	require.NoError(t, err)
	require.Equal(t, []any{g.addrs["bob"], g.addrs["carol"], g.addrs["alice"]}, msg["allowed_members"])
	require.Equal(t, "ASSIGNOR_ROUND_ROBIN", msg["assignor"])
	require.Equal(t, "45000", msg["session_timeout_ms"])

	msg, err = g.run(t, "update-group-policy", "billing", "--join-policy", "allowlist", "--allowed-members", "carol,bob")
	require.NoError(t, err)
	require.Equal(t, "/bftlog.topics.v1.MsgUpdateGroupPolicy", msg["@type"])
	require.Equal(t, g.addrs["alice"], msg["authority"])
	require.Equal(t, []any{g.addrs["carol"], g.addrs["bob"]}, msg["allowed_members"])

	msg, err = g.run(t, "update-group-policy", "billing", "--join-policy", "anyone")
	require.NoError(t, err)
	require.Equal(t, "JOIN_POLICY_ANYONE", msg["join_policy"])
	require.Empty(t, msg["allowed_members"])

	// Neither an address nor a key: the error names the flag and the value.
	_, err = g.run(t, "create-group", "billing", "--join-policy", "allowlist", "--allowed-members", "bob,dave")
	require.ErrorIs(t, err, sdkerrors.ErrKeyNotFound)
	require.Contains(t, PlainError(err).Error(), // as bftlogd prints it
		`--allowed-members "dave" is neither the name of a key in the keyring (memory backend: dave.info: key not found) nor an account address (decoding bech32 failed`)

	_, err = g.run(t, "create-group", "billing", "--join-policy", "closed")
	require.ErrorContains(t, err, `--join-policy "closed": want one of allowlist, anyone, unspecified`)
}

// --allow-producer on create-topic and update-topic-config takes key names and addresses too.
func TestTopicCommandsResolveAllowedProducers(t *testing.T) {
	g := newGroupCLI(t)
	for _, cmd := range []func() *cobra.Command{newCreateTopicCmd, newUpdateTopicConfigCmd} {
		c := cmd()
		require.NoError(t, c.Flags().Set(flagAllowProducer, "bob,"+g.addrs["carol"]))
		require.NoError(t, c.Flags().Set(flagAllowProducer, "alice"))
		var cfg types.TopicConfig
		require.NoError(t, applyConfigFlags(g.ctx, c, &cfg), c.Use)
		require.Equal(t, types.PRODUCER_POLICY_ALLOWLIST, cfg.ProducerPolicy)
		require.Equal(t, []string{g.addrs["bob"], g.addrs["carol"], g.addrs["alice"]}, cfg.AllowedProducers, c.Use)

		c = cmd()
		require.NoError(t, c.Flags().Set(flagAllowProducer, "dave"))
		err := applyConfigFlags(g.ctx, c, &cfg)
		require.ErrorContains(t, err, `--allow-producer "dave" is neither the name of a key`)
	}
}
