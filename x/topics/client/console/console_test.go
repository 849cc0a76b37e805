package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/stretchr/testify/require"
)

func TestConsoleServesItsFilesReadOnly(t *testing.T) {
	r := mux.NewRouter()
	Register(r)
	srv := httptest.NewServer(r)
	defer srv.Close()

	for path, want := range map[string]string{
		"/console/":            "<title>bftlog console</title>",
		"/console/console.js":  "x-cosmos-block-height",
		"/console/console.css": "font-variant-numeric",
	} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		body := new(strings.Builder)
		_, _ = io.Copy(body, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Contains(t, body.String(), want, path)
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'", path)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
	}

	resp, err := http.Post(srv.URL+"/console/", "text/plain", strings.NewReader("x"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.Get(srv.URL + "/console")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	require.Equal(t, Path, resp.Header.Get("Location"))
}
