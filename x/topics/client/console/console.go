// Package console is the bftlog topic console: a read-only web page, embedded in the binary and
// served by the node's API server, that shows topics, append rates, a live tail, consumer groups
// and the validator set. It reads the same REST routes any client can (no private endpoints) and
// holds no keys: it cannot sign or send anything.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"

	"github.com/gorilla/mux"
)

// Path is where the API server mounts the console.
const Path = "/console/"

//go:embed static
var static embed.FS

// Handler serves the console's files under Path.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(Path, http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "the console is read-only", http.StatusMethodNotAllowed)
			return
		}
		// Record keys, values and headers are written by anyone who may produce: the page
		// renders them as text only, and the policy forbids inline or foreign scripts so a
		// hostile record cannot run code in an operator's browser.
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// Register mounts the console on an API server's router.
func Register(router *mux.Router) {
	router.Handle(strings.TrimSuffix(Path, "/"), http.RedirectHandler(Path, http.StatusMovedPermanently))
	router.PathPrefix(Path).Handler(Handler())
}
