package bench

import (
	mathrand "math/rand/v2"
	"time"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// buildFunc makes producer pi's next MsgProduce of about n records (its records next, next+1,
// ...) and returns it with the records and value bytes it carries.
type buildFunc func(producer string, pi, next, n int, now time.Time) (*types.MsgProduce, int, int64, error)

// workload is what the measured producers send: record values, used in turn, and the codec
// the producer compresses its batches with.
type workload struct {
	values      [][]byte
	compression kbatch.Compression
}

// randomValues is the classic load: records of cfg.RecordBytes random bytes (4,096 distinct
// values used in turn), so that no store's compression makes the disk figures look better than
// a real, incompressible payload would.
func randomValues(cfg Config) workload {
	values := make([][]byte, 4096)
	rng := mathrand.New(mathrand.NewPCG(1, 2))
	for i := range values {
		values[i] = make([]byte, cfg.RecordBytes)
		for j := range values[i] {
			values[i][j] = byte(rng.Uint32())
		}
	}
	return workload{values: values}
}

// builder spreads a message's records evenly over the topic's partitions, starting at a
// partition that differs per producer: one batch per partition, each encoded (and compressed)
// once here, on the client, as a Kafka producer does before it sends.
func (w workload) builder(topic string, partitions int) buildFunc {
	return func(producer string, pi, next, n int, now time.Time) (*types.MsgProduce, int, int64, error) {
		msg := &types.MsgProduce{Producer: producer}
		per := (n + partitions - 1) / partitions
		var payload int64
		for p, i := 0, 0; i < n; p++ {
			recs := make([]types.BatchRecord, min(per, n-i))
			for j := range recs {
				v := w.values[(next+i+j)%len(w.values)]
				recs[j] = types.BatchRecord{Value: &types.Bytes{Data: v}, CreateTimeMs: now.UnixMilli()}
				payload += int64(len(v))
			}
			b, err := types.NewProduceBatch(topic, uint32((p+pi)%partitions), recs, w.compression)
			if err != nil {
				return nil, 0, 0, err
			}
			msg.Batches = append(msg.Batches, b)
			i += len(recs)
		}
		return msg, n, payload, nil
	}
}
