package e2e

import (
	"context"
	"errors"
	"fmt"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/bftlog/bftlog/testutil/node"
)

// kafkaGoClientID names segmentio/kafka-go's requests in the matrix's version table.
const kafkaGoClientID = "kafka-go-matrix"

// kafkaGoMatrix is the client matrix's rows for segmentio/kafka-go: its admin Client creates a
// topic of two partitions, its Conn reads the metadata, its Writer produces a keyed record with a
// header in each codec (acks=all), a partition Reader per partition fetches them back, a group
// Reader reads them committing each (ReadMessage's synchronous commit), and the Client deletes
// the topic. The group's offsets are checked on n's chain.
func kafkaGoMatrix(ctx context.Context, n *node.Node, addr, topic string, codecs []string) []matrixRow {
	var rows []matrixRow
	add := func(capability string, err error, detail string) {
		r := matrixRow{client: "kafka-go", capability: capability, ok: err == nil, detail: detail}
		if err != nil {
			r.detail = err.Error()
		}
		rows = append(rows, r)
	}
	transport := &kafkago.Transport{ClientID: kafkaGoClientID}
	dialer := &kafkago.Dialer{ClientID: kafkaGoClientID, Timeout: 10 * time.Second}
	admin := &kafkago.Client{Addr: kafkago.TCP(addr), Transport: transport}

	cres, err := admin.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{{Topic: topic, NumPartitions: 2, ReplicationFactor: 1}}})
	if err == nil {
		err = cres.Errors[topic]
	}
	add("admin create topic", err, "2 partitions")

	err = func() error {
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		defer conn.Close()
		parts, err := conn.ReadPartitions(topic)
		if err == nil && len(parts) != 2 {
			err = fmt.Errorf("%d partitions", len(parts))
		}
		return err
	}()
	add("metadata", err, "")

	codec := map[string]kafkago.Compression{"gzip": kafkago.Gzip, "snappy": kafkago.Snappy, "lz4": kafkago.Lz4, "zstd": kafkago.Zstd}
	for _, c := range codecs {
		w := &kafkago.Writer{Addr: kafkago.TCP(addr), Topic: topic, Transport: transport, Compression: codec[c],
			RequiredAcks: kafkago.RequireAll, Balancer: &kafkago.Hash{}, BatchTimeout: 10 * time.Millisecond}
		err := w.WriteMessages(ctx, kafkago.Message{Key: []byte("k-" + c), Value: []byte("v-" + c), Headers: []kafkago.Header{{Key: "codec", Value: []byte(c)}}})
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		add("produce "+c, err, "")
	}

	// Fetch: one Reader per partition from its first offset, until every codec's record is back.
	got := map[string]string{}
	err = func() error {
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		for p := 0; p < 2; p++ {
			r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: p, Dialer: dialer, MaxWait: 200 * time.Millisecond})
			hwm := int64(-1)
			for hwm < 0 || r.Offset() < hwm {
				m, err := r.FetchMessage(fctx)
				if err != nil {
					r.Close()
					return fmt.Errorf("partition %d: %w", p, err)
				}
				if len(m.Headers) == 1 && string(m.Key) == "k-"+string(m.Headers[0].Value) {
					got[string(m.Headers[0].Value)] = string(m.Value)
				}
				hwm = m.HighWaterMark
			}
			r.Close()
		}
		for _, c := range codecs {
			if got[c] != "v-"+c {
				return fmt.Errorf("the %s record read back as %q (all: %v)", c, got[c], got)
			}
		}
		return nil
	}()
	add("fetch", err, fmt.Sprintf("%d records, keys, values and headers intact", len(got)))

	group := topic + "-group"
	err = func() error {
		gctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{addr}, GroupID: group, Topic: topic, Dialer: dialer,
			StartOffset: kafkago.FirstOffset, MaxWait: 200 * time.Millisecond})
		for i := 0; i < len(codecs); i++ {
			if _, err := r.ReadMessage(gctx); err != nil {
				r.Close()
				return fmt.Errorf("record %d: %w", i, err)
			}
		}
		return errors.Join(r.Close(), chainCommittedSum(n, group, len(codecs)))
	}()
	add("consumer group with commits", err, "ReadMessage commits each record")

	dres, err := admin.DeleteTopics(ctx, &kafkago.DeleteTopicsRequest{Topics: []string{topic}})
	if err == nil {
		err = dres.Errors[topic]
	}
	add("admin delete topic", err, "")
	return rows
}
