package keeper_test

import (
	"bytes"
	"testing"

	"github.com/bftlog/bftlog/x/topics/types"
)

// BenchmarkProduce measures the keeper's append path (checks, partitioning, one batch write
// per partition) for messages of 1,000 records of 100 bytes on an in-memory IAVL-less store.
func BenchmarkProduce(b *testing.B) {
	f := newFixture(b)
	f.createTopic("bench", 8)
	records := make([]types.BatchRecord, 1000)
	for i := range records {
		records[i] = types.BatchRecord{Value: &types.Bytes{Data: bytes.Repeat([]byte{'x'}, 100)}}
	}
	batch := pb{Topic: "bench", Partition: 0, Records: records}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.produce(f.alice, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(records))/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkFetch measures reading 500 records from the middle of a partition.
func BenchmarkFetch(b *testing.B) {
	f := newFixture(b)
	f.createTopic("bench", 1)
	records := make([]types.BatchRecord, 1000)
	for i := range records {
		records[i] = types.BatchRecord{Value: &types.Bytes{Data: bytes.Repeat([]byte{'x'}, 100)}}
	}
	for i := 0; i < 20; i++ {
		if _, err := f.produce(f.alice, pb{Topic: "bench", Partition: 0, Records: records}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := f.fetch("bench", 0, 10_250, 500, 0)
		if err != nil || len(res.Records) != 500 {
			b.Fatal(err, len(res.Records))
		}
	}
	b.ReportMetric(float64(b.N*500)/b.Elapsed().Seconds(), "records/s")
}
