package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
)

// event is an application event as services log them to Kafka: the same field names in every
// record, a few enumerated values, and ids, times and numbers that differ from record to
// record. It makes values compressible the way real event streams are, unlike a repeated
// byte pattern (too easy) or random bytes (impossible).
type event struct {
	Type       string  `json:"type"`
	EventID    string  `json:"event_id"`
	UserID     string  `json:"user_id"`
	SessionID  string  `json:"session_id"`
	Timestamp  int64   `json:"ts"`
	Page       string  `json:"page"`
	Referrer   string  `json:"referrer,omitempty"`
	Query      string  `json:"query,omitempty"`
	ProductID  string  `json:"product_id,omitempty"`
	PriceCents int     `json:"price_cents,omitempty"`
	Device     *device `json:"device,omitempty"`
	Country    string  `json:"country"`
	DurationMs int     `json:"duration_ms"`
}

type device struct {
	OS      string `json:"os"`
	Browser string `json:"browser"`
	Version string `json:"version"`
}

// eventValues returns n JSON event values of about 100-300 bytes, the same for a given seed.
func eventValues(n int, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	var (
		kinds     = []string{"page_view", "page_view", "page_view", "click", "search", "add_to_cart", "checkout", "login"}
		pages     = []string{"/", "/products", "/products/%d", "/cart", "/checkout", "/account", "/search"}
		referrers = []string{"", "", "https://www.google.com/", "https://www.bing.com/", "https://news.ycombinator.com/", "https://t.co/x"}
		queries   = []string{"running shoes", "usb-c cable", "coffee grinder", "rain jacket", "headphones", "desk lamp"}
		oses      = []string{"android", "ios", "windows", "macos", "linux"}
		browsers  = []string{"chrome", "safari", "firefox", "edge"}
		countries = []string{"DE", "US", "FR", "GB", "NL", "BR", "IN", "JP"}
	)
	ts := int64(1_764_460_800_000) // 2025-11-30, advancing a few ms per event
	out := make([][]byte, n)
	for i := range out {
		ts += int64(rng.IntN(20))
		e := event{
			Type:       pick(kinds),
			EventID:    fmt.Sprintf("%016x", rng.Uint64()),
			UserID:     fmt.Sprintf("u-%07d", rng.IntN(2_000_000)),
			SessionID:  fmt.Sprintf("%08x", rng.Uint32()),
			Timestamp:  ts,
			Country:    pick(countries),
			DurationMs: rng.IntN(5000),
		}
		e.Page = pick(pages)
		if e.Page == "/products/%d" {
			e.Page = fmt.Sprintf(e.Page, rng.IntN(100_000))
		}
		switch e.Type {
		case "search":
			e.Query = pick(queries)
		case "add_to_cart", "checkout":
			e.ProductID = fmt.Sprintf("sku-%06d", rng.IntN(100_000))
			e.PriceCents = 99 + rng.IntN(50_000)
		case "page_view":
			e.Referrer = pick(referrers)
		}
		// Some producers leave the device out (server-side events): sizes vary, as in practice.
		if rng.IntN(4) != 0 {
			e.Device = &device{OS: pick(oses), Browser: pick(browsers), Version: fmt.Sprintf("%d.0.%d", 100+rng.IntN(30), rng.IntN(9000))}
		}
		bz, err := json.Marshal(e)
		if err != nil {
			panic(err) // a fixed struct of strings and numbers always marshals
		}
		out[i] = bz
	}
	return out
}
