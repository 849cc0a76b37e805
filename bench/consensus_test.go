package bench

import (
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
)

// counterSum adds a counter's series, or only those with the label asked for.
func TestCounterSum(t *testing.T) {
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(`# TYPE bftlog_data_plane_proposed_bytes_total counter
bftlog_data_plane_proposed_bytes_total{how="named"} 300
bftlog_data_plane_proposed_bytes_total{how="carried"} 20
# TYPE cometbft_mempool_failed_txs counter
cometbft_mempool_failed_txs{chain_id="a"} 2
cometbft_mempool_failed_txs{chain_id="b"} 3
`))
	require.NoError(t, err)
	require.Equal(t, 300.0, counterSum(fams, "bftlog_data_plane_proposed_bytes_total", "how", "named"))
	require.Equal(t, 20.0, counterSum(fams, "bftlog_data_plane_proposed_bytes_total", "how", "carried"))
	require.Equal(t, 5.0, counterSum(fams, "cometbft_mempool_failed_txs", "", ""))
	require.Zero(t, counterSum(fams, "absent", "", ""))
	require.Zero(t, counterSum(nil, "cometbft_mempool_failed_txs", "", ""))
}
