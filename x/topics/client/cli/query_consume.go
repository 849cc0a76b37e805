package cli

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	errorsmod "cosmossdk.io/errors"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"

	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

func newConsumeCmd(v Verifier) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "consume [topic]",
		Short: "Print records of a topic from an offset, like kafka-console-consumer",
		Long: `Print the records of one partition (--partition) or of every partition in turn, from
--offset, or from the log start offset (--from-beginning, the default), up to the high watermark
or --max records; with --follow, keep tailing as blocks commit (websocket subscription to new
blocks, polling if that fails) until interrupted or --max. With --group, read the partitions the
group assigns from its committed offsets. --verify checks every record against a header signed
by the validators (see --trust-height). Text output prints one value per line (with the --print-*
flags adding fields); --output json prints one JSON object per record.`,
		Example: `bftlogd query topics consume orders --from-beginning --print-key
bftlogd query topics consume orders --partition 2 --offset 100 --max 10 -o json
bftlogd query topics consume orders --follow --verify --trust-height 1 --trust-hash 4F2A...`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runConsume(cmd, args, v) },
	}
	cmd.Flags().Int32(flagPartition, -1, "partition to read (-1: all, in partition order)")
	cmd.Flags().Int64(flagOffset, -1, "first offset to read (needs --partition unless all partitions should start there)")
	cmd.Flags().Bool(flagFromBeginning, false, "start at each partition's log start offset (the default)")
	cmd.Flags().Uint64(flagMax, 0, "stop after this many records (0: read up to the high watermark)")
	cmd.Flags().String(flagKeySeparator, "\t", "separator between printed fields")
	cmd.Flags().Bool(flagPrintKey, false, "print the key before the value")
	cmd.Flags().Bool(flagPrintOffset, false, "print the offset")
	cmd.Flags().Bool(flagPrintPartition, false, "print the partition")
	cmd.Flags().Bool(flagPrintHeaders, false, "print the headers as k=v,k=v")
	cmd.Flags().Bool(flagPrintTimestamp, false, "print CreateTime in ms")
	cmd.Flags().Uint32(flagFetchRecords, 1000, "records per fetch request")
	cmd.Flags().String(flagGroup, "", "consume as a member of this consumer group (signs with --from): join, read the assigned partitions from the committed offsets, commit as it goes")
	cmd.Flags().Bool(flagStay, false, "with --group: stay in the group when done instead of leaving it")
	cmd.Flags().Bool(flagFollow, false, "keep reading new records as blocks commit (Ctrl-C to stop)")
	if v != nil {
		v.AddFlags(cmd)
	}
	// Tx flags give --from, keyring and gas for --group; reads need only --node.
	flags.AddTxFlagsToCmd(cmd)
	out := cmd.Flags().Lookup(flags.FlagOutput)
	out.DefValue = "text"
	_ = out.Value.Set("text")
	return cmd
}

// ConsumedRecord is one record as consume prints it with --output json. Key and value are
// strings when they are valid UTF-8, else base64 with key_encoding/value_encoding "base64".
type ConsumedRecord struct {
	Topic           string       `json:"topic"`
	Partition       uint32       `json:"partition"`
	Offset          uint64       `json:"offset"`
	Key             *string      `json:"key"`
	KeyEncoding     string       `json:"key_encoding,omitempty"`
	Value           *string      `json:"value"`
	ValueEncoding   string       `json:"value_encoding,omitempty"`
	Headers         []JSONHeader `json:"headers"`
	CreateTimeMs    int64        `json:"create_time_ms"`
	LogAppendTimeMs int64        `json:"log_append_time_ms"`
	Producer        string       `json:"producer"`
	Height          int64        `json:"height"`
}

// JSONHeader is one header in consume's JSON output.
type JSONHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func encodeBytes(b *types.Bytes) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b.Data) {
		s := string(b.Data)
		return &s, ""
	}
	s := base64.StdEncoding.EncodeToString(b.Data)
	return &s, "base64"
}

func runConsume(cmd *cobra.Command, args []string, v Verifier) error {
	cmd.SilenceUsage = true
	if group, _ := cmd.Flags().GetString(flagGroup); group != "" {
		return runGroupConsume(cmd, args[0], group, v)
	}
	clientCtx, err := client.GetClientQueryContext(cmd)
	if err != nil {
		return err
	}
	fs := cmd.Flags()
	topic := args[0]
	partition, _ := fs.GetInt32(flagPartition)
	offset, _ := fs.GetInt64(flagOffset)
	fromBeginning, _ := fs.GetBool(flagFromBeginning)
	maxTotal, _ := fs.GetUint64(flagMax)
	fetchRecords, _ := fs.GetUint32(flagFetchRecords)
	follow, _ := fs.GetBool(flagFollow)
	if fromBeginning && offset >= 0 {
		return fmt.Errorf("--from-beginning and --offset exclude each other")
	}
	r, err := reader(cmd, clientCtx, v)
	if err != nil {
		return PlainError(err)
	}
	ctx := cmd.Context()
	parts, err := r.Partitions(ctx, topic)
	if err != nil {
		return PlainError(err)
	}
	if partition >= int32(len(parts)) {
		return fmt.Errorf("partition out of range: topic %q has %d partitions, asked for %d", topic, len(parts), partition)
	}
	next := map[uint32]uint64{}
	for _, p := range parts {
		next[p.Partition] = p.LogStartOffset
		if offset >= 0 {
			next[p.Partition] = uint64(offset)
		}
		if (partition < 0 || p.Partition == uint32(partition)) && (next[p.Partition] < p.LogStartOffset || next[p.Partition] > p.HighWatermark) {
			return PlainError(errorsmod.Wrapf(types.ErrOffsetOutOfRange, "offset %d of %s is outside [log start offset %d, high watermark %d]",
				next[p.Partition], p.Label(), p.LogStartOffset, p.HighWatermark))
		}
	}
	var waiter *blockWaiter
	if follow {
		waiter = newBlockWaiter(ctx, clientCtx)
		defer waiter.close()
	}
	w := cmd.OutOrStdout()
	var printed uint64
	for {
		for _, p := range parts {
			if partition >= 0 && p.Partition != uint32(partition) {
				continue
			}
			for next[p.Partition] < p.HighWatermark && (maxTotal == 0 || printed < maxTotal) {
				want := fetchRecords
				if maxTotal > 0 && maxTotal-printed < uint64(want) {
					want = uint32(maxTotal - printed)
				}
				res, err := r.Fetch(ctx, &types.QueryFetchRequest{Topic: topic, Partition: p.Partition, Offset: next[p.Partition], MaxRecords: want})
				if err != nil {
					return PlainError(err)
				}
				if maxTotal > 0 {
					// Whole batches come back; print no more than --max.
					consumer.Truncate(res, uint32(min(maxTotal-printed, math.MaxUint32)))
				}
				for _, rec := range res.Records {
					if err := printRecord(w, cmd, clientCtx.OutputFormat, topic, p.Partition, rec); err != nil {
						return err
					}
					printed++
				}
				next[p.Partition] = res.NextOffset
				if len(res.Records) == 0 {
					break
				}
			}
		}
		if !follow || (maxTotal > 0 && printed >= maxTotal) {
			break
		}
		if err := waiter.wait(ctx); err != nil {
			return err
		}
		if parts, err = r.Partitions(ctx, topic); err != nil {
			return PlainError(err)
		}
		for _, p := range parts {
			if _, ok := next[p.Partition]; !ok { // a partition added while following
				next[p.Partition] = p.LogStartOffset
			}
		}
	}
	provenNote(cmd, r, fmt.Sprintf("%d records", printed))
	return nil
}

func printRecord(w io.Writer, cmd *cobra.Command, format, topic string, partition uint32, r types.Record) error {
	if format == "json" {
		out := ConsumedRecord{
			Topic: topic, Partition: partition, Offset: r.Offset,
			Headers:      make([]JSONHeader, 0, len(r.Headers)),
			CreateTimeMs: r.CreateTimeMs, LogAppendTimeMs: r.LogAppendTimeMs, Producer: r.Producer, Height: r.Height,
		}
		out.Key, out.KeyEncoding = encodeBytes(r.Key)
		out.Value, out.ValueEncoding = encodeBytes(r.Value)
		for _, h := range r.Headers {
			out.Headers = append(out.Headers, JSONHeader{Key: h.Key, Value: string(h.Value)})
		}
		bz, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(bz))
		return err
	}
	fs := cmd.Flags()
	sep, _ := fs.GetString(flagKeySeparator)
	var fields []string
	if b, _ := fs.GetBool(flagPrintTimestamp); b {
		fields = append(fields, "CreateTime:"+time.UnixMilli(r.CreateTimeMs).UTC().Format(time.RFC3339Nano))
	}
	if b, _ := fs.GetBool(flagPrintPartition); b {
		fields = append(fields, "Partition:"+strconv.FormatUint(uint64(partition), 10))
	}
	if b, _ := fs.GetBool(flagPrintOffset); b {
		fields = append(fields, "Offset:"+strconv.FormatUint(r.Offset, 10))
	}
	if b, _ := fs.GetBool(flagPrintHeaders); b {
		hs := make([]string, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = h.Key + "=" + string(h.Value)
		}
		if len(hs) == 0 {
			fields = append(fields, "NO_HEADERS")
		} else {
			fields = append(fields, strings.Join(hs, ","))
		}
	}
	if b, _ := fs.GetBool(flagPrintKey); b {
		fields = append(fields, nullable(r.Key))
	}
	fields = append(fields, nullable(r.Value))
	_, err := fmt.Fprintln(w, strings.Join(fields, sep))
	return err
}

func nullable(b *types.Bytes) string {
	if b == nil {
		return "null"
	}
	return string(b.Data)
}

// runGroupConsume consumes the partitions the group assigns to the --from account, from the
// committed offsets up to the high watermarks, committing after each poll.
func runGroupConsume(cmd *cobra.Command, topic, group string, v Verifier) error {
	clientCtx, err := client.GetClientTxContext(cmd)
	if err != nil {
		return err
	}
	fs := cmd.Flags()
	if fs.Changed(flagOffset) || fs.Changed(flagPartition) || fs.Changed(flagFromBeginning) {
		return fmt.Errorf("--group reads from the committed offsets of its assigned partitions; use reset-offsets to move them")
	}
	maxTotal, _ := fs.GetUint64(flagMax)
	fetchRecords, _ := fs.GetUint32(flagFetchRecords)
	stay, _ := fs.GetBool(flagStay)
	follow, _ := fs.GetBool(flagFollow)
	r, err := reader(cmd, clientCtx, v)
	if err != nil {
		return PlainError(err)
	}
	signer, err := txclient.NewSignerFromFlags(clientCtx, fs)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	var waiter *blockWaiter
	if follow {
		waiter = newBlockWaiter(ctx, clientCtx)
		defer waiter.close()
	}
	lastBeat := time.Now()
	var opts []consumer.Option
	if p, ok := r.(consumer.Prover); ok {
		// --verify: the starting offsets and every poll's range are proven before a commit.
		opts = append(opts, consumer.WithProver(p))
	}
	c, err := consumer.Join(ctx, clientCtx, signer, group, []string{topic}, opts...)
	if err != nil {
		return PlainError(err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "joined group %s at generation %d with %s\n", group, c.Generation(), describeAssignment(c.Assignment()))
	var printed uint64
	for maxTotal == 0 || printed < maxTotal {
		want := fetchRecords
		if maxTotal > 0 && maxTotal-printed < uint64(want) {
			want = uint32(maxTotal - printed)
		}
		recs, err := c.Poll(ctx, want)
		if err != nil {
			return PlainError(err)
		}
		if err := r.CheckConsumed(ctx, recs); err != nil {
			return PlainError(err)
		}
		if len(recs) == 0 && follow {
			// Nothing new: wait for a block, and keep the membership alive every few seconds
			// rather than with a transaction per block.
			if err := waiter.wait(ctx); err != nil {
				break
			}
			if time.Since(lastBeat) < 3*time.Second {
				continue
			}
			lastBeat = time.Now()
		}
		for _, r := range recs {
			if err := printRecord(cmd.OutOrStdout(), cmd, clientCtx.OutputFormat, r.Topic, r.Partition, r.Record); err != nil {
				return err
			}
			printed++
		}
		if err := c.Commit(ctx); errors.Is(err, consumer.ErrRebalanced) {
			fmt.Fprintf(cmd.ErrOrStderr(), "group rebalanced: generation %d with %s\n", c.Generation(), describeAssignment(c.Assignment()))
			continue
		} else if err != nil {
			return PlainError(err)
		}
		if len(recs) == 0 && !follow {
			break
		}
	}
	if stay {
		return nil
	}
	return PlainError(c.Leave(ctx))
}

func describeAssignment(a []types.TopicPartitions) string {
	if len(a) == 0 {
		return "no partitions"
	}
	parts := make([]string, 0, len(a))
	for _, tp := range a {
		ps := make([]string, len(tp.Partitions))
		for i, p := range tp.Partitions {
			ps[i] = strconv.FormatUint(uint64(p), 10)
		}
		parts = append(parts, tp.Topic+"/["+strings.Join(ps, ",")+"]")
	}
	return "partitions " + strings.Join(parts, " ")
}
