package cmd

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/client/tx"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/gateway/kafka"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
)

// flagIngress names the node's API server, whose binary ingress the gateway appends through.
const flagIngress = "ingress"

// flagGranter makes the gateway produce as an x/authz grantee of a topic owner.
const flagGranter = "granter"

const (
	flagUsers   = "users"
	flagTLSCert = "tls-cert"
	flagTLSKey  = "tls-key"

	flagMaxConnections      = "max-connections"
	flagMaxRequestBytes     = "max-request-bytes"
	flagMaxBufferedBytes    = "max-buffered-bytes"
	flagMaxFetchBytes       = "max-fetch-bytes"
	flagMaxTransactionBytes = "max-transaction-bytes"
	flagIdleTimeout         = "idle-timeout"
	flagRequestTimeout      = "request-timeout"

	flagMetricsListen         = "metrics-listen"
	flagTelemetryMetrics      = "telemetry-metrics"
	flagTelemetryPushInterval = "telemetry-push-interval"
	flagTelemetryMaxClients   = "telemetry-max-clients"
	flagTelemetryMaxBytes     = "telemetry-max-bytes"
	flagTelemetryMaxSeries    = "telemetry-max-series"
)

// gatewayLimits sets cfg's bounds from the command's flags.
func gatewayLimits(cmd *cobra.Command, cfg *kafka.Config) {
	f := cmd.Flags()
	cfg.MaxConnections, _ = f.GetInt(flagMaxConnections)
	cfg.MaxRequestBytes, _ = f.GetInt32(flagMaxRequestBytes)
	cfg.MaxBufferedBytes, _ = f.GetInt64(flagMaxBufferedBytes)
	cfg.MaxFetchBytes, _ = f.GetInt32(flagMaxFetchBytes)
	cfg.MaxTransactionBytes, _ = f.GetInt64(flagMaxTransactionBytes)
	cfg.IdleTimeout, _ = f.GetDuration(flagIdleTimeout)
	cfg.RequestTimeout, _ = f.GetDuration(flagRequestTimeout)
}

// gatewayTelemetry sets cfg's /metrics address and client-metrics subscription from the
// command's flags.
func gatewayTelemetry(cmd *cobra.Command, cfg *kafka.Config) {
	f := cmd.Flags()
	cfg.MetricsAddr, _ = f.GetString(flagMetricsListen)
	cfg.Telemetry.Metrics, _ = f.GetStringSlice(flagTelemetryMetrics)
	cfg.Telemetry.PushInterval, _ = f.GetDuration(flagTelemetryPushInterval)
	cfg.Telemetry.MaxClients, _ = f.GetInt(flagTelemetryMaxClients)
	cfg.Telemetry.MaxPushBytes, _ = f.GetInt32(flagTelemetryMaxBytes)
	cfg.Telemetry.MaxSeries, _ = f.GetInt(flagTelemetryMaxSeries)
	if len(cfg.Telemetry.Metrics) > 0 && cfg.MetricsAddr == "" {
		// Clients would push, and be answered, for series nobody can read.
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: --%s without --%s: clients push metrics that are not served\n", flagTelemetryMetrics, flagMetricsListen)
	}
}

// gatewayUsers reads --users and builds each user's signer from its keyring key, with the
// command's tx flags (fees, gas, chain id).
func gatewayUsers(cmd *cobra.Command, clientCtx client.Context, path string) ([]kafka.User, error) {
	bz, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var file struct {
		Users []struct {
			Name     string `json:"name"`
			Password string `json:"password"`
			Key      string `json:"key"`
		} `json:"users"`
	}
	dec := json.NewDecoder(bytes.NewReader(bz))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("--%s %s: %w", flagUsers, path, err)
	}
	var users []kafka.User
	for _, u := range file.Users {
		addr, name, _, err := client.GetFromFields(clientCtx, clientCtx.Keyring, u.Key)
		if err != nil {
			return nil, fmt.Errorf("user %q: key %q: %w", u.Name, u.Key, err)
		}
		uctx := clientCtx.WithFrom(name).WithFromName(name).WithFromAddress(addr)
		txf, err := tx.NewFactoryCLI(uctx, cmd.Flags())
		if err != nil {
			return nil, err
		}
		signer, err := txclient.NewSigner(uctx, txf.WithFromName(name), txf.SimulateAndExecute() || !cmd.Flags().Changed(flags.FlagGas))
		if err != nil {
			return nil, fmt.Errorf("user %q: %w", u.Name, err)
		}
		useIngress(cmd, signer)
		users = append(users, kafka.User{Name: u.Name, Password: u.Password, Signer: signer})
	}
	return users, nil
}

// gatewayNodes reads a --node list of several nodes (with --ingress, one API server per node in
// the same order) into a client that fails over between them, and makes it clientCtx's client.
// One node is left as the SDK's client reads it, as before.
func gatewayNodes(cmd *cobra.Command, clientCtx client.Context, logf func(string, ...any)) (client.Context, error) {
	rpcs, _ := cmd.Flags().GetString(flags.FlagNode)
	ingress, _ := cmd.Flags().GetString(flagIngress)
	list, err := txclient.ParseNodes(rpcs, ingress)
	if err != nil {
		return clientCtx, fmt.Errorf("--%s/--%s: %w", flags.FlagNode, flagIngress, err)
	}
	if len(list) == 1 {
		return clientCtx, nil
	}
	nodes, err := txclient.NewNodes(list)
	if err != nil {
		return clientCtx, err
	}
	nodes.OnSwitch(func(sw txclient.Switch) {
		logf("node %s did not answer (%v): now using node %s", list[sw.From].RPC, sw.Cause, list[sw.To].RPC)
	})
	// A signer built on this context sends through the list (txclient.Signer.UseNodes).
	return clientCtx.WithClient(nodes).WithNodeURI(list[0].RPC), nil
}

// useIngress points a signer at --ingress when the gateway uses one node; with a list, the
// signer already sends through the list's ingresses.
func useIngress(cmd *cobra.Command, signer *txclient.Signer) {
	ingress, _ := cmd.Flags().GetString(flagIngress)
	if ingress != "" && !strings.Contains(ingress, ",") {
		signer.UseRawIngress(strings.TrimSuffix(ingress, "/") + app.RawTxPath)
	}
}

// newKafkaCmd is `bftlogd kafka`: the Kafka wire-protocol gateway.
func newKafkaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kafka",
		Short: "Kafka wire-protocol gateway: existing Kafka clients on bftlog",
		RunE:  client.ValidateCmd,
	}
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Listen for Kafka clients and serve them from a bftlog node, signing appends with --from",
		Long: `Kafka clients (franz-go, librdkafka/kcat, the Java client) connect to --listen as to a
single broker that leads every partition. Metadata, ListOffsets and Fetch read chain state from
--node (or --grpc-addr); Produce, CreateTopics, DeleteTopics and CreatePartitions become
transactions signed by --from, with produce requests from all clients coalesced into few large
MsgProduce transactions. Produce answers once the records are in a block (acks=1 and acks=-1
alike; acks=0 is not answered). Transactions are unordered (no account sequence), so the --from
key may also sign elsewhere: with the CLI, or in a second gateway for availability.

Without --users every client is one Kafka principal, the --from account: clients share its
producer ids, transactional ids, group memberships and their deposits, and any client may fence
another's transactional producer or commit as another's group member. Use it for clients you
trust alike (one application or team); give clients that do not trust each other --users.
Whatever the mode, each connection is bounded (--max-request-bytes, --request-timeout,
--idle-timeout) and so are all together (--max-connections, --max-buffered-bytes).

--metrics-listen serves Prometheus metrics at /metrics: the gateway's own, and the metrics
clients push (KIP-714) on the --telemetry-metrics subscription, one gauge per data point,
labelled by client id and client instance (--telemetry-max-clients of them at most). Without
--telemetry-metrics clients are told to push nothing.`,
		Example: `bftlogd kafka serve --listen 127.0.0.1:9092 --from gateway --node tcp://127.0.0.1:26657
bftlogd kafka serve --listen 127.0.0.1:9092 --from gateway --node tcp://127.0.0.1:26657 --ingress http://127.0.0.1:1317
bftlogd kafka serve --listen 127.0.0.1:9092 --from gateway --node tcp://10.0.0.2:26657,tcp://10.0.0.3:26657 --ingress http://10.0.0.2:1317,http://10.0.0.3:1317
kcat -b 127.0.0.1:9092 -L`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			logf := func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...) }
			clientCtx, err := client.GetClientTxContext(cmd)
			if err != nil {
				return err
			}
			if clientCtx, err = gatewayNodes(cmd, clientCtx, logf); err != nil {
				return err
			}
			signer, err := txclient.NewSignerFromFlags(clientCtx, cmd.Flags())
			if err != nil {
				return err
			}
			useIngress(cmd, signer)
			if granter, _ := cmd.Flags().GetString(flagGranter); granter != "" {
				if _, err := sdk.AccAddressFromBech32(granter); err != nil {
					return fmt.Errorf("--%s: %w", flagGranter, err)
				}
				signer.UseGrant(granter)
			}
			addr, _ := cmd.Flags().GetString("listen")
			advertise, _ := cmd.Flags().GetString("advertise")
			cfg := kafka.Config{Addr: addr, Advertise: advertise, ClientCtx: clientCtx, Signer: signer, Log: logf}
			gatewayLimits(cmd, &cfg)
			gatewayTelemetry(cmd, &cfg)
			if path, _ := cmd.Flags().GetString(flagUsers); path != "" {
				if cfg.Users, err = gatewayUsers(cmd, clientCtx, path); err != nil {
					return err
				}
			}
			certFile, _ := cmd.Flags().GetString(flagTLSCert)
			keyFile, _ := cmd.Flags().GetString(flagTLSKey)
			if certFile != "" || keyFile != "" {
				cert, err := tls.LoadX509KeyPair(certFile, keyFile)
				if err != nil {
					return fmt.Errorf("--%s/--%s: %w", flagTLSCert, flagTLSKey, err)
				}
				cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
			}
			gw, err := kafka.Listen(cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "kafka gateway listening on %s, signing as %s\n", gw.Addr(), signer.Address())
			if gw.MetricsAddr() != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "kafka gateway metrics at http://%s/metrics\n", gw.MetricsAddr())
			}
			stop := make(chan os.Signal, 1)
			signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
			go func() { <-stop; _ = gw.Close() }()
			return gw.Serve()
		},
	}
	serve.Flags().String("listen", "127.0.0.1:9092", "address Kafka clients connect to")
	serve.Flags().String(flagUsers, "", `JSON file of Kafka users: {"users": [{"name": "...", "password": "...", "key": "<keyring key>"}]}; clients must then authenticate with SASL PLAIN or SCRAM-SHA-256/512, and each user's transactions are signed with its key (without it, every client is one principal signing with --from)`)
	serve.Flags().Int(flagMaxConnections, kafka.DefaultMaxConnections, "connections served at once; one more is closed as it is accepted")
	serve.Flags().Int32(flagMaxRequestBytes, kafka.DefaultMaxRequestBytes, "largest request, and what one connection holds of requests not yet answered (before SASL authentication a request is at most 8 KiB)")
	serve.Flags().Int64(flagMaxBufferedBytes, kafka.DefaultMaxBufferedBytes, "bytes of requests not yet answered and Fetch answers not yet sent, over all connections (each connection's first 64 KiB aside)")
	serve.Flags().Int32(flagMaxFetchBytes, kafka.DefaultMaxFetchBytes, "largest Fetch answer past its first batch, whatever the client asks")
	serve.Flags().Int64(flagMaxTransactionBytes, kafka.DefaultMaxTransactionBytes, "bytes one principal's open Kafka transactions hold (records, offsets, transactional ids); past it they are refused with THROTTLING_QUOTA_EXCEEDED")
	serve.Flags().Duration(flagIdleTimeout, kafka.DefaultIdleTimeout, "close a connection that sends no request for this long")
	serve.Flags().Duration(flagRequestTimeout, kafka.DefaultRequestTimeout, "time for a request's bytes to arrive once announced, for an answer to be sent, and for a client to authenticate (with --users)")
	serve.Flags().String(flagMetricsListen, "", "address to serve Prometheus metrics at /metrics (e.g. 127.0.0.1:9464): the gateway's own series and the client metrics pushed on --telemetry-metrics; empty: not served")
	serve.Flags().StringSlice(flagTelemetryMetrics, nil, `client metric name prefixes the gateway subscribes to (KIP-714), comma-separated, e.g. org.apache.kafka.producer.,org.apache.kafka.consumer.; "*" for every metric; empty: no subscription, clients push nothing`)
	serve.Flags().Duration(flagTelemetryPushInterval, kafka.DefaultTelemetryPushInterval, "how often subscribed clients push their metrics (100ms to 1h)")
	serve.Flags().Int(flagTelemetryMaxClients, kafka.DefaultTelemetryMaxClients, "client instances whose pushed metrics are kept; a new one past it evicts one that never pushed, else the one heard from longest ago")
	serve.Flags().Int(flagTelemetryMaxSeries, kafka.DefaultTelemetryTotalSeries, "client metric series exported, of all clients together (each client at most 256); points of further series are dropped and counted")
	serve.Flags().Int32(flagTelemetryMaxBytes, kafka.DefaultTelemetryMaxPushBytes, "largest metrics push, compressed and decompressed (TELEMETRY_TOO_LARGE past it)")
	serve.Flags().String(flagTLSCert, "", "PEM certificate: serve TLS (with --tls-key)")
	serve.Flags().String(flagTLSKey, "", "PEM private key of --tls-cert")
	serve.Flags().String(flagGranter, "", "produce in this account's name as its x/authz grantee: each produce is a MsgExec of MsgProduce (producer = the granter) signed with --from, which needs the granter's grant (bftlogd tx topics grant-produce, or tx authz grant ... generic); groups, offsets and topics are still --from's own; --users' keys produce as themselves")
	serve.Flags().String("advertise", "", "host:port given to Kafka clients as the broker's address (default: --listen); a fleet behind a load balancer advertises the balancer")
	serve.Flags().String(flagIngress, "", "the node's API server (e.g. http://127.0.0.1:1317): appends go to its binary ingress and are acknowledged without their bytes coming back (recommended; without it, CometBFT RPC at --node answers each acknowledgement with the whole transaction, JSON-encoded); with several --node addresses, one API server per node, comma-separated in the same order")
	flags.AddTxFlagsToCmd(serve)
	serve.Flags().Lookup(flags.FlagNode).Usage = "CometBFT RPC of the node to use (tcp://host:26657), or a comma-separated list of nodes: the gateway uses one while it answers and moves to the next within a second when it refuses connections, stops answering (a probe after 250 ms, answered within 400 ms) or falls 2 blocks behind; a transaction left with a node that stopped answering is looked up by hash on the next and sent to it again, the same bytes"
	cmd.AddCommand(serve)
	return cmd
}
