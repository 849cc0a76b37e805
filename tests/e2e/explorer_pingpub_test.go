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

	"github.com/bftlog/bftlog/testutil/node"
)

// checkPingPubPages opens ping.pub's block and transaction pages in headless Chromium for the
// named produces and checks what they show. dist is a ping.pub build (yarn build) with
// scripts/explorer/bftlog-local.json as its only chain and logos/bftlog.svg in public/logos/
// (docs/explorers.md); it is served here on a port of its own, as any static server would
// (history routing: unknown paths get index.html), and pointed at this node's REST API through
// the endpoint ping.pub keeps in localStorage. BFTLOG_EXPLORER_SCREENSHOTS=dir saves each page.
func checkPingPubPages(t *testing.T, n *node.Node, dist string, produces []namedProduce) {
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
	origin := "http://" + ln.Addr().String()
	const chain = "bftlog-local"

	b := startBrowser(t)
	require.NoError(t, chromedp.Do(b.ctx, chromedp.Navigate(origin+"/")))
	_, err = chromedp.Run(b.ctx, chromedp.Evaluate[any](fmt.Sprintf(`localStorage.setItem("endpoint-%s", JSON.stringify({address: %q, provider: "test"}))`, chain, n.API)))
	require.NoError(t, err)
	shot := func(name string) {
		dir := os.Getenv("BFTLOG_EXPLORER_SCREENSHOTS")
		if dir == "" {
			return
		}
		png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
	}
	// waitPage loads a page and waits until its text holds every want.
	waitPage := func(path string, want ...string) string {
		t.Helper()
		require.NoError(t, chromedp.Do(b.ctx, chromedp.Navigate(origin+path)))
		deadline := time.Now().Add(45 * time.Second)
		for {
			text, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body?.innerText ?? ""`))
			require.NoError(t, err)
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
				t.Fatalf("ping.pub %s never showed %q; it shows:\n%s", path, missing, text)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	p := produces[0]
	// The block page lists the produce under its own hash, as a Produce, linking to its page.
	blockText := waitPage(fmt.Sprintf("/%s/block/%d", chain, p.height), p.hash, "Produce")
	require.NotContains(t, blockText, "OrderedTx")
	shot("block")
	link, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector('a[href$="/tx/%s"]')?.getAttribute("href") ?? ""`, p.hash)))
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("/%s/tx/%s", chain, p.hash), link)
	// The chain's logo loads wherever the explorer is served.
	_, err = chromedp.Run(b.ctx, chromedp.Poll[bool](`Array.from(document.images).some(i => i.src.endsWith("/logos/bftlog.svg") && i.complete && i.naturalWidth > 0)`, chromedp.WithPollingTimeout(20*time.Second)))
	require.NoError(t, err, "the chain logo did not load")

	// The transaction page: topic, partition and record count in the message's batches table
	// (beside the record batch's base64, in a box that scrolls), the fee in the summary.
	q := produces[len(produces)-1] // partition 2: ping.pub leaves a 0 cell empty
	waitPage(fmt.Sprintf("/%s/tx/%s", chain, q.hash), q.hash, "MsgProduce", "Success")
	batch, err := chromedp.Run(b.ctx, chromedp.Evaluate[map[string]string](`(() => {
		const th = Array.from(document.querySelectorAll("th")).find(h => h.textContent.trim() === "topic");
		const table = th.closest("table"), row = table.tBodies[0].rows[0];
		const o = {html: table.outerHTML.replace(/[A-Za-z0-9+/=]{200,}/g, "…").slice(0, 3000)};
		Array.from(table.tHead.rows[0].cells).forEach((h, i) => { o[h.textContent.trim()] = row.cells[i].textContent.trim(); });
		row.children[0].scrollIntoView({block: "center"});
		o.fee = Array.from(document.querySelectorAll("tr")).find(r => r.children[0]?.textContent.trim() === "Fee")?.children[1]?.textContent.trim();
		return o;
	})()`))
	require.NoError(t, err)
	require.Equal(t, q.topic, batch["topic"], batch["html"])
	require.Equal(t, fmt.Sprint(q.partition), batch["partition"])
	require.Equal(t, "1000", batch["record count"])
	require.Equal(t, pingPubFee(t, q.fee), batch["fee"])
	shot("tx")
	t.Logf("ping.pub: block %d lists %s as Produce; its page shows topic %s, partition %s, %s records, fee %s",
		q.height, q.hash, batch["topic"], batch["partition"], batch["record count"], batch["fee"])
}

// pingPubFee is how ping.pub writes a fee in stake (6 decimals, as the chain JSON's asset says,
// at most 2 shown): 38469stake is "0.04 STAKE".
func pingPubFee(t *testing.T, fee string) string {
	t.Helper()
	amount, err := strconv.ParseFloat(strings.TrimSuffix(fee, "stake"), 64)
	require.NoError(t, err, fee)
	shown := strings.TrimRight(strings.TrimRight(strconv.FormatFloat(amount/1e6, 'f', 2, 64), "0"), ".")
	return shown + " STAKE"
}
