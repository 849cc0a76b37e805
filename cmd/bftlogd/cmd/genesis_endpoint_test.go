package cmd_test

import (
	"bytes"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	svrcmd "github.com/cosmos/cosmos-sdk/server/cmd"
	genutiltypes "github.com/cosmos/cosmos-sdk/x/genutil/types"

	"github.com/bftlog/bftlog/cmd/bftlogd/cmd"
)

// The genesis ceremony's coordinator writes each operator's data-plane endpoint into
// genesis.json; a second call replaces it, "" removes it, and a malformed endpoint or an
// account address in place of an operator's leaves the file as it was.
func TestGenesisSetsDataPlaneEndpoints(t *testing.T) {
	home := t.TempDir()
	run := func(args ...string) error {
		root := cmd.NewRootCmd()
		root.SetArgs(append(args, "--home", home))
		return svrcmd.Execute(root, "BFTLOGD_GENESIS_TEST", home)
	}
	require.NoError(t, run("init", "g", "--chain-id", "genesis-test"))
	const op = "bftlogvaloper1vfhkuer9v3047h6lta047h6lta047h6ldtn5w0"
	state := func() string {
		gen, err := genutiltypes.AppGenesisFromFile(filepath.Join(home, "config", "genesis.json"))
		require.NoError(t, err)
		return string(gen.AppState)
	}
	require.NoError(t, run("genesis", "set-data-plane-endpoint", op, "http://10.0.0.1:1318"))
	require.NoError(t, run("genesis", "set-data-plane-endpoint", op, "https://dp.bank-a.example:1318"))
	require.Contains(t, state(), `"endpoint": "https://dp.bank-a.example:1318"`)
	require.NotContains(t, state(), "10.0.0.1")
	before := state()
	require.Error(t, run("genesis", "set-data-plane-endpoint", op, "ftp://x:1"))
	require.Error(t, run("genesis", "set-data-plane-endpoint", "bftlog1vfhkuer9v3047h6lta047h6lta047h6l06e8nj", "http://10.0.0.1:1318"))
	require.Equal(t, before, state())
	require.NoError(t, run("genesis", "validate"))
	require.NoError(t, run("genesis", "set-data-plane-endpoint", op, ""))
	require.NotContains(t, state(), op)

	// The node's data-plane key, as `bftlogd data-plane-key` prints it, beside the endpoint;
	// with --operator, the flags that register it with its proof.
	keyCmd := func(args ...string) string {
		root := cmd.NewRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append(append([]string{"data-plane-key"}, args...), "--home", home))
		require.NoError(t, svrcmd.Execute(root, "BFTLOGD_GENESIS_TEST", home))
		return strings.TrimSpace(out.String())
	}
	key := keyCmd()
	raw, err := base64.StdEncoding.DecodeString(key)
	require.NoError(t, err, key)
	require.Len(t, raw, 32)
	require.Equal(t, key, keyCmd(), "the same key each time")
	flags := strings.Fields(keyCmd("--operator", op))
	require.Len(t, flags, 2)
	require.Equal(t, "--data-plane-key="+key, flags[0])
	require.NoError(t, run(append([]string{"genesis", "set-data-plane-endpoint", op, "http://10.0.0.1:1318"}, flags...)...))
	require.Contains(t, state(), `"data_plane_key": "`+key+`"`)
	before = state()
	require.Error(t, run("genesis", "set-data-plane-endpoint", op, "http://10.0.0.1:1318", "--data-plane-key="+key), "no proof")
	other := strings.Fields(keyCmd("--operator", "bftlogvaloper1qypqxpq9qcrsszg2pvxq6rs0zqg3yyc5hf0rhd"))
	require.Error(t, run(append([]string{"genesis", "set-data-plane-endpoint", op, "http://10.0.0.1:1318"}, other...)...), "a proof for another operator")
	require.Error(t, run("genesis", "set-data-plane-endpoint", op, "http://10.0.0.1:1318", "--data-plane-key=not base64!"))
	require.Equal(t, before, state())
	require.NoError(t, run("genesis", "validate"))
}
