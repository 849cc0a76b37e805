package cmd

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bftlog/bftlog/internal/testnet"
)

// testnetCmd writes the homes of an N-validator network, after the SDK's `testnet init-files`:
// keys in each home's test keyring, genesis accounts, gentxs, the collected genesis, persistent
// peers, and each validator's data plane (its listener, and its key and endpoint registered
// in genesis; ordering.peers stays empty). It runs the ceremony's own commands
// (docs/deploy.md) with this binary, so a testnet is made as operators make a network by hand.
func testnetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "testnet",
		Short: "Write the homes of an N-validator network (keys, gentxs, genesis, peers, data plane): on the hosts of --hosts, or on 127.0.0.1 with distinct ports",
		Long: `Write the homes of an N-validator network into --output-dir (node0, node1, ...), as the SDK's
"testnet init-files" does: each home holds its validator's key (test keyring, key "val<i>"),
the collected genesis (every validator funded and bonded with equal power), persistent peers,
the REST API on, and the data plane (ordering.listen-address, and each validator's data-plane
key and endpoint in genesis, which nodes read instead of a fixed ordering.peers). With --hosts,
node i runs on the i-th address, at the default ports (several nodes on one address get ports
10 apart), and every listener but pprof binds 0.0.0.0: RPC, REST, gRPC and Prometheus are then
open to anyone reaching the host, as a test network's are; put a firewall in front of them or
bind them to 127.0.0.1 in config.toml/app.toml before using such homes anywhere else. Without
--hosts, every node runs on 127.0.0.1 with ports 10 apart. Start each with
"bftlogd start --home <output-dir>/node<i>".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, _ := cmd.Flags().GetInt(flagValidators)
			dir, _ := cmd.Flags().GetString(flagOutputDir)
			chainID, _ := cmd.Flags().GetString(flagTestnetChainID)
			hostList, _ := cmd.Flags().GetString(flagHosts)
			hosts, local, err := testnetHosts(hostList, n, cmd.Flags().Changed(flagValidators))
			if err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			if _, err := os.Stat(dir); err == nil {
				return fmt.Errorf("%s exists: remove it or choose another --output-dir", dir)
			}
			homes := make([]string, len(hosts))
			for i := range homes {
				homes[i] = filepath.Join(dir, fmt.Sprintf("node%d", i))
			}
			net, err := writeTestnet(self, homes, hosts, local, chainID)
			if err != nil {
				return err
			}
			for i, p := range net {
				fmt.Fprintf(cmd.OutOrStdout(), "node%d  %s  p2p %d  rpc %d  api %d  grpc %d  data plane %d  home %s\n",
					i, hosts[i], p.P2P, p.RPC, p.API, p.GRPC, p.DataPlane, homes[i])
			}
			return nil
		},
	}
	cmd.Flags().Int(flagValidators, 4, "number of validators")
	cmd.Flags().String(flagOutputDir, "./.testnet", "directory for the validators' homes (must not exist)")
	cmd.Flags().String(flagTestnetChainID, "bftlog-testnet", "chain id")
	cmd.Flags().String(flagHosts, "", "the validators' addresses, comma-separated, one per validator (default: 127.0.0.1 for all)")
	return cmd
}

const (
	flagValidators     = "validators"
	flagOutputDir      = "output-dir"
	flagTestnetChainID = "chain-id"
	flagHosts          = "hosts"
)

// testnetHosts is each validator's address; local when every one is 127.0.0.1 (then nodes
// listen on loopback only).
func testnetHosts(list string, n int, nSet bool) (hosts []string, local bool, err error) {
	if list == "" {
		if n < 1 {
			return nil, false, fmt.Errorf("--%s must be at least 1", flagValidators)
		}
		for i := 0; i < n; i++ {
			hosts = append(hosts, "127.0.0.1")
		}
		return hosts, true, nil
	}
	hosts = strings.Split(list, ",")
	if nSet && n != len(hosts) {
		return nil, false, fmt.Errorf("--%s %d but %d hosts", flagValidators, n, len(hosts))
	}
	local = true
	for i, h := range hosts {
		hosts[i] = strings.TrimSpace(h)
		if hosts[i] == "" {
			return nil, false, fmt.Errorf("--%s: empty address at %d", flagHosts, i)
		}
		local = local && hosts[i] == "127.0.0.1"
	}
	return hosts, local, nil
}

// writeTestnet generates the homes with bin and writes each node's listeners, peers and
// client settings.
func writeTestnet(bin string, homes, hosts []string, local bool, chainID string) ([]testnet.Ports, error) {
	ports := testnet.Layout(hosts)
	endpoints := make([]string, len(hosts))
	for i, h := range hosts {
		endpoints[i] = "http://" + hostPort(h, ports[i].DataPlane)
	}
	run := func(i int, args ...string) (string, error) {
		c := exec.Command(bin, append(args, "--home", homes[i])...)
		var stderr bytes.Buffer
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil {
			return "", fmt.Errorf("bftlogd %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return string(out), nil
	}
	spec := testnet.NewSpec(chainID, homes)
	spec.DataPlaneEndpoints = endpoints
	res, err := testnet.Generate(run, spec)
	if err != nil {
		return nil, err
	}
	peers := make([]testnet.Peer, len(hosts))
	for i, h := range hosts {
		peers[i] = testnet.Peer{ID: res.NodeIDs[i], Host: h, P2PPort: ports[i].P2P, DataPlane: endpoints[i]}
	}
	// Nodes of a local network listen on loopback only; on hosts of their own, on every
	// interface (an address given may be a NAT's, not the host's own).
	bind := "0.0.0.0"
	if local {
		bind = "127.0.0.1"
	}
	for i, home := range homes {
		p := ports[i]
		cfg := filepath.Join(home, "config")
		if err := testnet.SetTOML(filepath.Join(cfg, "config.toml"),
			"p2p.laddr", "tcp://"+hostPort(bind, p.P2P),
			"p2p.external_address", hostPort(hosts[i], p.P2P),
			"p2p.persistent_peers", testnet.PersistentPeers(peers, i),
			// Private and shared addresses are the rule on a LAN or one machine, as in the SDK's testnet.
			"p2p.addr_book_strict", "false",
			"p2p.allow_duplicate_ip", "true",
			"rpc.laddr", "tcp://"+hostPort(bind, p.RPC),
			"instrumentation.prometheus_listen_addr", hostPort(bind, p.Prometheus),
			"rpc.pprof_laddr", hostPort("127.0.0.1", p.Pprof),
		); err != nil {
			return nil, err
		}
		if err := testnet.SetTOML(filepath.Join(cfg, "app.toml"),
			"api.enable", "true",
			"api.address", "tcp://"+hostPort(bind, p.API),
			"grpc.address", hostPort(bind, p.GRPC),
			// ordering.peers stays empty: the data-plane endpoints are in genesis, so each node
			// follows the chain's list (a validator admitted later included) and keeps mempool
			// gossip, which a fixed list turns off (root.go).
			"ordering.listen-address", "tcp://"+hostPort(bind, p.DataPlane),
		); err != nil {
			return nil, err
		}
		if err := testnet.SetTOML(filepath.Join(cfg, "client.toml"),
			"chain-id", chainID,
			"keyring-backend", "test",
			"node", "tcp://"+hostPort(hosts[i], p.RPC),
		); err != nil {
			return nil, err
		}
	}
	return ports, nil
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
