package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
)

// browser starts headless Chromium (Debian's chromium package; BFTLOG_CHROMIUM overrides the
// path) and records every request the page makes and every error it throws or logs.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	requests []string // "METHOD URL"
	errors   []string
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	path := os.Getenv("BFTLOG_CHROMIUM")
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path == "" {
			path, _ = exec.LookPath(name)
		}
	}
	if path == "" {
		t.Fatal("the console test needs Chromium: apt-get install chromium (or set BFTLOG_CHROMIUM)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 1600),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{ctx: ctx}
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, ev.Request.Method+" "+ev.Request.URL)
		case *runtime.EventExceptionThrown:
			b.errors = append(b.errors, fmt.Sprintf("exception: %s %v", ev.ExceptionDetails.Text, ev.ExceptionDetails.Exception))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				b.errors = append(b.errors, fmt.Sprintf("console.error: %v", ev.Args))
			}
		}
	}))
	return b
}

// text returns the text of the first element matching a CSS selector, or "" if there is none.
func (b *browser) text(t *testing.T, selector string) string {
	t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q)?.textContent ?? "")`, selector)))
	require.NoError(t, err)
	return s
}

func (b *browser) count(t *testing.T, selector string) int {
	t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, selector)))
	require.NoError(t, err)
	return n
}

// waitText waits until the element's text is want; the console refreshes once a second.
func (b *browser) waitText(t *testing.T, selector, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	got := ""
	for time.Now().Before(deadline) {
		if got = b.text(t, selector); got == want {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("console: %s shows %q, want %q (status %q)", selector, got, want, b.text(t, "#status"))
}

func (b *browser) waitCount(t *testing.T, selector string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	got := 0
	for time.Now().Before(deadline) {
		if got = b.count(t, selector); got == want {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("console: %d elements match %s, want %d", got, selector, want)
}

func produceFile(t *testing.T, n *node.Node, topic string, partition, from, to int) {
	t.Helper()
	var lines strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&lines, "k-%d:v-%d\n", i, i)
	}
	file := filepath.Join(t.TempDir(), "records.txt")
	require.NoError(t, os.WriteFile(file, []byte(lines.String()), 0o644))
	n.MustCLI("", "tx", "topics", "produce", topic, "--file", file, "--partition", strconv.Itoa(partition),
		"--key-separator", ":", "--header", "source=console", "--from", "alice")
}

// TestConsoleInBrowser opens the topic console in headless Chromium against a real node,
// produces records and consumes some as a group, and checks what the page shows: watermarks,
// the append-rate totals, a live tail with key, value, headers and block, the group's lag as it
// changes, and the validator with who admitted it. The page may only read: every request it
// makes must be a GET, and it must throw and log no errors.
func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node and a browser")
	}
	n := node.StartSingle(t, "alice")
	b := startBrowser(t)
	require.NoError(t, chromedp.Do(b.ctx, chromedp.Navigate(n.API+"/console/")))

	// The chain and its validator, admitted in genesis.
	b.waitText(t, "#chain", "chain "+node.ChainID)
	b.waitCount(t, "#validators tbody tr", 1)
	require.Contains(t, b.text(t, "#validators tbody tr"), "node0")
	require.Equal(t, "genesis", b.text(t, "#validators [data-admitted-by]"))

	const topic = "console.orders"
	createTopic(n, "alice", topic, 2)
	b.waitText(t, `[data-hw="console.orders/1"]`, "0")
	produceFile(t, n, topic, 0, 0, 10)
	b.waitText(t, `[data-hw="console.orders/0"]`, "10")
	b.waitText(t, `[data-rate-total="console.orders"]`, "10")

	// Live tail of partition 0 from offset 0, driven through the form as a user would.
	require.NoError(t, chromedp.Do(b.ctx,
		chromedp.SetValue(chromedp.CSS("#tail-partition"), topic+"/0"),
		chromedp.SetValue(chromedp.CSS("#tail-offset"), "0"),
		chromedp.Click(chromedp.CSS("#tail-start")),
	))
	b.waitCount(t, "#tail tbody tr", 10)
	var rec struct {
		Record struct {
			Height string `json:"height"`
		} `json:"record"`
	}
	require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "topics", "record", topic, "0", "3", "-o", "json")), &rec))
	require.Equal(t, "k-3", b.text(t, `#tail tr[data-offset="3"] [data-key]`))
	require.Equal(t, "v-3", b.text(t, `#tail tr[data-offset="3"] [data-value]`))
	require.Equal(t, "source=console", b.text(t, `#tail tr[data-offset="3"] [data-headers]`))
	require.Equal(t, rec.Record.Height, b.text(t, `#tail tr[data-offset="3"] [data-block]`))

	// A group reads 4 records and stays a member: lag 6 on partition 0; 5 more records: lag 11,
	// and the tail shows them without being restarted.
	n.MustCLI("", "query", "topics", "consume", topic, "--group", "billing", "--max", "4", "--stay", "--from", "alice")
	b.waitText(t, `[data-lag="billing/console.orders/0"]`, "6")
	require.Contains(t, b.text(t, `[data-group="billing"] h3`), "1 member")
	produceFile(t, n, topic, 0, 10, 15)
	b.waitText(t, `[data-lag="billing/console.orders/0"]`, "11")
	b.waitText(t, `[data-total-lag="billing"]`, "11")
	b.waitCount(t, "#tail tbody tr", 15)
	require.Equal(t, "v-14", b.text(t, `#tail tr[data-offset="14"] [data-value]`))
	// No error left on the page.
	b.waitText(t, "#status", "")
	if path := os.Getenv("BFTLOG_CONSOLE_SCREENSHOT"); path != "" { // to look at the page
		png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, png, 0o644))
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(t, b.errors)
	require.NotEmpty(t, b.requests)
	for _, r := range b.requests {
		require.True(t, strings.HasPrefix(r, "GET "+n.API+"/"), "the console made a request other than a GET to its node: %s", r)
	}
	t.Logf("console: %d requests, all GET", len(b.requests))
}
