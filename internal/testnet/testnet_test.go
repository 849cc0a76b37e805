package testnet

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Nodes sharing an address get ports PortStep apart and no port twice; nodes on addresses of
// their own keep the defaults.
func TestLayout(t *testing.T) {
	spread := Layout([]string{"10.0.0.1", "10.0.0.2", "10.0.0.3"})
	for _, p := range spread {
		require.Equal(t, DefaultPorts, p)
	}
	shared := Layout([]string{"127.0.0.1", "127.0.0.1", "10.0.0.9", "127.0.0.1"})
	require.Equal(t, DefaultPorts, shared[2])
	require.Equal(t, DefaultPorts.P2P+2*PortStep, shared[3].P2P)
	used := map[int]int{}
	for i, p := range shared {
		if i == 2 {
			continue // another address
		}
		for _, port := range []int{p.P2P, p.RPC, p.API, p.GRPC, p.DataPlane, p.Prometheus, p.Pprof} {
			used[port]++
			require.Equal(t, 1, used[port], "port %d of node %d handed out twice", port, i)
		}
	}
}

func TestPeers(t *testing.T) {
	peers := []Peer{
		{ID: "a", Host: "10.0.0.1", P2PPort: 26656, DataPlane: "http://10.0.0.1:1318"},
		{ID: "b", Host: "10.0.0.2", P2PPort: 26656, DataPlane: "http://10.0.0.2:1318"},
		{ID: "c", Host: "fd00::3", P2PPort: 26666, DataPlane: "http://[fd00::3]:1328"},
	}
	require.Equal(t, "a@10.0.0.1:26656,c@[fd00::3]:26666", PersistentPeers(peers, 1))
	require.Equal(t, []string{"http://10.0.0.2:1318", "http://[fd00::3]:1328"}, DataPlanePeers(peers, 0))
}

// SetTOML keeps comments and other settings, writes arrays and strings, and refuses a key the
// file lacks.
func TestSetTOML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.toml")
	require.NoError(t, os.WriteFile(path, []byte("# top\n[api]\n\n# on?\nenable = false\naddress = \"x\"\n\n[ordering]\npeers = []\n"), 0o644))
	require.NoError(t, SetTOML(path, "api.enable", "true", "api.address", "tcp://0.0.0.0:1317", "ordering.peers", `["http://a:1", "http://b:2"]`))
	bz, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "# top\n[api]\n\n# on?\nenable = true\naddress = \"tcp://0.0.0.0:1317\"\n\n[ordering]\npeers = [\"http://a:1\", \"http://b:2\"]\n", string(bz))
	require.ErrorContains(t, SetTOML(path, "api.enabled", "true"), "no single setting api.enabled")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, bz, after, "a refused setting leaves the file as it was")
}
