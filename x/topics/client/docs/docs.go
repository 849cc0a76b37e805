// Package docs serves the OpenAPI (Swagger 2.0) description of the x/topics REST routes.
//
// openapi.json is generated from proto/bftlog/topics/v1/query.proto by `make proto-gen`
// (scripts/protocgen.sh, protoc-gen-swagger v1.16.0, the grpc-gateway version that serves
// the routes), so it follows the protos rather than hand edits. Do not edit it.
package docs

import (
	_ "embed"
	"net/http"
	"strconv"
)

// OpenAPI is the generated Swagger 2.0 JSON document, embedded so that the node binary
// serves it without reading files at run time.
//
//go:embed openapi.json
var OpenAPI []byte

// Path is where the node serves OpenAPI, next to the routes it describes.
const Path = "/bftlog/topics/v1/openapi.json"

// Handler serves OpenAPI as application/json. Any origin may read it, because block
// explorers and the web console fetch it from their own origins and it is public,
// read-only data.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions: // CORS preflight
			h.Set("Access-Control-Allow-Methods", "GET, HEAD")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(OpenAPI)))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(OpenAPI)
	})
}
