package verify

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

func recAt(offset uint64, value string) types.Record {
	return types.Record{Offset: offset, Value: &types.Bytes{Data: []byte(value)}}
}

// judge tells a height that holds the served records from one that does not cover them yet,
// one that holds fewer (compaction since) and one that contradicts them (a lie).
func TestJudgeServedAgainstProven(t *testing.T) {
	served := []types.Record{recAt(2, "a"), recAt(5, "b"), recAt(6, "c")}
	const end = 8
	for _, tc := range []struct {
		name   string
		proven FetchResult
		want   proof
	}{
		{"the same records, the next one past the range", FetchResult{Records: []types.Record{recAt(2, "a"), recAt(5, "b"), recAt(6, "c"), recAt(9, "d")}, NextOffset: 10}, held},
		{"the same records up to the high watermark", FetchResult{Records: []types.Record{recAt(2, "a"), recAt(5, "b"), recAt(6, "c")}, NextOffset: end}, held},
		{"not provable up to the range's end yet", FetchResult{Records: []types.Record{recAt(2, "a"), recAt(5, "b")}, NextOffset: 6}, notYet},
		{"compacted since: fewer, none other", FetchResult{Records: []types.Record{recAt(5, "b"), recAt(9, "d")}, NextOffset: 10}, fewer},
		{"a record the node hid", FetchResult{Records: []types.Record{recAt(2, "a"), recAt(4, "x"), recAt(5, "b"), recAt(6, "c")}, NextOffset: 7}, contradicted},
		{"a record the node altered", FetchResult{Records: []types.Record{recAt(2, "a"), recAt(5, "B"), recAt(6, "c")}, NextOffset: end}, contradicted},
		{"a record the node hid at the range's end", FetchResult{Records: []types.Record{recAt(2, "a"), recAt(5, "b"), recAt(6, "c"), recAt(7, "z")}, NextOffset: end}, contradicted},
	} {
		got, err := judge("test", tc.proven, served, end)
		require.Equal(t, tc.want, got, tc.name)
		require.Equal(t, got == held, err == nil, tc.name)
	}
}

// proveRecent: a newest height holding fewer records sends the check back to the newest
// earlier height that holds them; a contradiction is checked at the next height before it is
// reported; a walk back stops at a height that does not hold fewer.
func TestProveRecentWalksBackOverCompaction(t *testing.T) {
	c := &Client{}
	outcomes := func(newest int64, at map[int64]proof, tried *[]int64) func(int64) (FetchResult, proof, error) {
		return func(h int64) (FetchResult, proof, error) {
			if h == 0 {
				h = newest
			}
			*tried = append(*tried, h)
			o, ok := at[h]
			if !ok {
				o = fewer
			}
			if o == held {
				return FetchResult{Height: h}, held, nil
			}
			return FetchResult{Height: h}, o, &Error{What: "test", Height: h, Err: errors.New("no")}
		}
	}
	var tried []int64
	res, err := c.proveRecent(context.Background(), outcomes(100, map[int64]proof{96: held}, &tried))
	require.NoError(t, err)
	require.EqualValues(t, 96, res.Height)
	require.Equal(t, []int64{100, 99, 98, 97, 96}, tried)

	tried = nil
	_, err = c.proveRecent(context.Background(), outcomes(100, map[int64]proof{97: contradicted}, &tried))
	require.ErrorIs(t, err, ErrNotVerified)
	require.Equal(t, []int64{100, 99, 98, 97}, tried, "below the height the node served from")
	var verr *Error
	require.ErrorAs(t, err, &verr)
	require.EqualValues(t, 97, verr.Height, "the contradiction is the answer, not the newest height's")

	tried = nil
	_, err = c.proveRecent(context.Background(), outcomes(100, map[int64]proof{}, &tried))
	require.ErrorIs(t, err, ErrNotVerified)
	require.Len(t, tried, types.RecordHistoryBlocks, "no further back than nodes keep bytes")

	// Contradicted at 100, then the next height holds (the node served from it).
	newest := int64(100)
	tried = nil
	next := outcomes(100, map[int64]proof{100: contradicted, 101: held}, &tried)
	res, err = c.proveRecent(context.Background(), func(h int64) (FetchResult, proof, error) {
		r, o, err := next(newest)
		newest = 101
		return r, o, err
	})
	require.NoError(t, err)
	require.EqualValues(t, 101, res.Height)
	newest, tried = 100, nil
	next = outcomes(100, map[int64]proof{100: contradicted, 101: contradicted}, &tried)
	_, err = c.proveRecent(context.Background(), func(h int64) (FetchResult, proof, error) {
		r, o, err := next(newest)
		newest = 101
		return r, o, err
	})
	require.ErrorIs(t, err, ErrNotVerified, "contradicted at the next height too: a lie")
}

// A proven read that fails because retention moved the log start offset past the served
// records sends the check back a height; one past the proven high watermark waits; any other
// failure is final.
func TestFetchFailureJudgesRetention(t *testing.T) {
	res := FetchResult{Partition: types.Partition{Topic: "t", LogStartOffset: 100, HighWatermark: 200}}
	outOfRange := fmt.Errorf("%w: offset", types.ErrOffsetOutOfRange)
	require.Equal(t, fewer, fetchFailure(outOfRange, res, 50), "retention removed them since")
	require.Equal(t, notYet, fetchFailure(outOfRange, res, 250), "not provable yet")
	require.Equal(t, failed, fetchFailure(errors.New("proof does not verify"), res, 50))
	require.Equal(t, failed, fetchFailure(outOfRange, FetchResult{}, 50), "no proven partition")
}
