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

	// The node's data-plane key, as `bftlogd data-plane-key` prints it, beside the endpoint.
	root := cmd.NewRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"data-plane-key", "--home", home})
	require.NoError(t, svrcmd.Execute(root, "BFTLOGD_GENESIS_TEST", home))
	key := strings.TrimSpace(out.String())
	raw, err := base64.StdEncoding.DecodeString(key)
	require.NoError(t, err, out.String())
	require.Len(t, raw, 32)
	again := cmd.NewRootCmd()
	var out2 bytes.Buffer
	again.SetOut(&out2)
	again.SetArgs([]string{"data-plane-key", "--home", home})
	require.NoError(t, svrcmd.Execute(again, "BFTLOGD_GENESIS_TEST", home))
	require.Equal(t, out.String(), out2.String(), "the same key each time")
	require.NoError(t, run("genesis", "set-data-plane-endpoint", op, "http://10.0.0.1:1318", key))
	require.Contains(t, state(), `"data_plane_key": "`+key+`"`)
	before = state()
	require.Error(t, run("genesis", "set-data-plane-endpoint", op, "http://10.0.0.1:1318", base64.StdEncoding.EncodeToString(raw[:31])))
	require.Error(t, run("genesis", "set-data-plane-endpoint", op, "http://10.0.0.1:1318", "not base64!"))
	require.Equal(t, before, state())
	require.NoError(t, run("genesis", "validate"))
}
