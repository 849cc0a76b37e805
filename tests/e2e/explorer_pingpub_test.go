package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/app/ordering"
	"github.com/bftlog/bftlog/testutil/node"
)

// pingPubChainName is the chain_name of scripts/explorer/bftlog-local.json, ping.pub's path prefix.
const pingPubChainName = "bftlog-local"

// pingPub is a ping.pub build in headless Chromium. dist is its dist directory (yarn build,
// with scripts/explorer/bftlog-local.json as its only chain and logos/bftlog.svg in
// public/logos/: docs/explorers.md), served here on a port of its own as any static server
// would (history routing: unknown paths get index.html). BFTLOG_EXPLORER_SCREENSHOTS=dir saves
// the pages checked.
type pingPub struct {
	t      *testing.T
	b      *browser
	origin string
}

func openPingPub(t *testing.T, dist string) *pingPub {
	t.Helper()
	_, err := os.Stat(filepath.Join(dist, "index.html"))
	require.NoError(t, err, "PINGPUB_DIST must name a ping.pub build's dist directory")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	files := http.FileServer(http.Dir(dist))
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := os.Stat(filepath.Join(dist, filepath.Clean(r.URL.Path))); err != nil {
			r.URL.Path = "/"
		}
		files.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &pingPub{t: t, b: startBrowser(t), origin: "http://" + ln.Addr().String()}
}

// use points ping.pub at n's REST API, through the endpoint it keeps in localStorage.
func (pp *pingPub) use(n *node.Node) {
	pp.t.Helper()
	require.NoError(pp.t, chromedp.Do(pp.b.ctx, chromedp.Navigate(pp.origin+"/")))
	_, err := chromedp.Run(pp.b.ctx, chromedp.Evaluate[any](fmt.Sprintf(
		`localStorage.setItem("endpoint-%s", JSON.stringify({address: %q, provider: "test"}))`, pingPubChainName, n.API)))
	require.NoError(pp.t, err)
}

func (pp *pingPub) shot(name string) {
	dir := os.Getenv("BFTLOG_EXPLORER_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(pp.b.ctx, chromedp.FullScreenshot(100))
	require.NoError(pp.t, err)
	require.NoError(pp.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// page loads a page of the chain (or, path "", stays on the current one) and waits until its
// text holds every want.
func (pp *pingPub) page(path string, want ...string) string {
	pp.t.Helper()
	if path != "" {
		require.NoError(pp.t, chromedp.Do(pp.b.ctx, chromedp.Navigate(pp.origin+"/"+pingPubChainName+path)))
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		text, err := chromedp.Run(pp.b.ctx, chromedp.Evaluate[string](`document.body?.innerText ?? ""`))
		require.NoError(pp.t, err)
		missing := ""
		for _, w := range want {
			if !strings.Contains(text, w) {
				missing = w
			}
		}
		if missing == "" {
			return text
		}
		if time.Now().After(deadline) {
			pp.t.Fatalf("ping.pub %s never showed %q; it shows:\n%s", path, missing, text)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// eval runs a script on the current page.
func eval[T any](pp *pingPub, script string) T {
	pp.t.Helper()
	v, err := chromedp.Run(pp.b.ctx, chromedp.Evaluate[T](script))
	require.NoError(pp.t, err)
	return v
}

// checkShown checks ping.pub's pages of named produces: the block page lists each under its own
// hash as a Produce linking to its page, the chain logo loads, and the transaction page shows
// topic, partition and record count (in the message's batches table, beside the record batch's
// base64 in a box that scrolls) and the fee (in the summary).
func (pp *pingPub) checkShown(produces []namedProduce) {
	t := pp.t
	t.Helper()
	p := produces[len(produces)-1] // partition 2: ping.pub leaves a cell of 0 empty
	text := pp.page(fmt.Sprintf("/block/%d", p.height), p.hash, "Produce")
	require.NotContains(t, text, "OrderedTx")
	link := eval[string](pp, fmt.Sprintf(`document.querySelector('a[href$="/tx/%s"]')?.getAttribute("href") ?? ""`, p.hash))
	require.Equal(t, fmt.Sprintf("/%s/tx/%s", pingPubChainName, p.hash), link)
	_, err := chromedp.Run(pp.b.ctx, chromedp.Poll[bool](`Array.from(document.images).some(i => i.src.endsWith("/logos/bftlog.svg") && i.complete && i.naturalWidth > 0)`,
		chromedp.WithPollingTimeout(20*time.Second)))
	require.NoError(t, err, "the chain logo did not load")
	pp.shot("block")

	pp.page("/tx/"+p.hash, p.hash, "MsgProduce", "Success")
	batch := eval[map[string]string](pp, `(() => {
		const th = Array.from(document.querySelectorAll("th")).find(h => h.textContent.trim() === "topic");
		const table = th.closest("table"), row = table.tBodies[0].rows[0], o = {};
		Array.from(table.tHead.rows[0].cells).forEach((h, i) => { o[h.textContent.trim()] = row.cells[i].textContent.trim(); });
		row.cells[0].scrollIntoView({block: "center"});
		o.fee = Array.from(document.querySelectorAll("tr")).find(r => r.cells[0]?.textContent.trim() === "Fee")?.cells[1]?.textContent.trim();
		return o;
	})()`)
	require.Equal(t, p.topic, batch["topic"])
	require.Equal(t, fmt.Sprint(p.partition), batch["partition"])
	require.Equal(t, "1000", batch["record count"])
	require.Equal(t, pingPubFee(t, p.fee), batch["fee"])
	pp.shot("tx")
	t.Logf("ping.pub: block %d lists %s as Produce; its page shows topic %s, partition %s, %s records, fee %s",
		p.height, p.hash, batch["topic"], batch["partition"], batch["record count"], batch["fee"])
}

// checkTxList opens the recent transactions page, which lists what blocks seen since it opened
// carry, has produce make one more named produce, and waits for its row: hash, Produce, a fee.
func (pp *pingPub) checkTxList(produce func() namedProduce) {
	pp.t.Helper()
	pp.page("/tx", "Messages")
	p := produce()
	pp.page("", p.hash)
	row := eval[string](pp, fmt.Sprintf(`document.querySelector('a[href$="/tx/%s"]').closest("tr").innerText`, p.hash))
	require.Contains(pp.t, row, "Produce")
	require.Contains(pp.t, row, "STAKE", "the fee")
	pp.shot("txs")
	pp.t.Logf("ping.pub's transactions page: %q", strings.Join(strings.Fields(row), " "))
}

// checkNotHeld checks the transaction page of a produce this node no longer holds: the reference
// (MsgOrderedTx), successful, and named_tx saying not_held with its note.
func (pp *pingPub) checkNotHeld(p namedProduce) {
	pp.t.Helper()
	text := pp.page("/tx/"+p.hash, p.refHash, "MsgOrderedTx", "Success", ordering.NamedNotHeld)
	require.Contains(pp.t, text, ordering.NoteOf(ordering.NamedNotHeld))
	pp.shot("tx-not-held")
}

// pingPubFee is how ping.pub's transaction page writes a fee in stake (6 decimals, as the chain
// JSON's asset says, at most 2 shown): 38469stake is "0.04 STAKE".
func pingPubFee(t *testing.T, fee string) string {
	t.Helper()
	amount, err := strconv.ParseFloat(strings.TrimSuffix(fee, "stake"), 64)
	require.NoError(t, err, fee)
	shown := strings.TrimRight(strings.TrimRight(strconv.FormatFloat(amount/1e6, 'f', 2, 64), "0"), ".")
	return shown + " STAKE"
}
