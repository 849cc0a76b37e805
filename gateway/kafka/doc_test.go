package kafka

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dispatched reads server.go's dispatch: the method each request type is handed to (Produce
// is handed over before it, in an if on its type, so that produce requests pipeline).
func dispatched(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "server.go", nil, 0)
	require.NoError(t, err)
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		is, ok := n.(*ast.IfStmt)
		if !ok {
			return true
		}
		as, ok := is.Init.(*ast.AssignStmt)
		if !ok || len(as.Rhs) != 1 {
			return true
		}
		ta, ok := as.Rhs[0].(*ast.TypeAssertExpr)
		if !ok {
			return true
		}
		typ, ok := kmsgRequest(ta.Type)
		if !ok {
			return true
		}
		ast.Inspect(is.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "s" && out[typ] == "" {
						out[typ] = sel.Sel.Name
					}
				}
			}
			return true
		})
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "dispatch" {
			return true
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok || len(cc.List) != 1 || len(cc.Body) != 1 {
				return true
			}
			typ, ok := kmsgRequest(cc.List[0])
			if !ok {
				return true
			}
			ret, ok := cc.Body[0].(*ast.ReturnStmt)
			if !ok || len(ret.Results) != 1 {
				return true
			}
			switch call := ret.Results[0].(type) {
			case *ast.CallExpr:
				switch fun := call.Fun.(type) {
				case *ast.SelectorExpr:
					out[typ] = fun.Sel.Name
				case *ast.Ident:
					out[typ] = fun.Name
				}
			}
			return false
		})
		return false
	})
	return out
}

// kmsgRequest is the API name of a *kmsg.<Name>Request type expression.
func kmsgRequest(e ast.Expr) (string, bool) {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return "", false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "kmsg" || !strings.HasSuffix(sel.Sel.Name, "Request") {
		return "", false
	}
	return strings.TrimSuffix(sel.Sel.Name, "Request"), true
}

// declares tells whether file declares a function or method named name.
func declares(t *testing.T, file, name string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err, file)
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == name {
			return true
		}
	}
	return false
}

// doc.go maps every API key the gateway answers (versions.go) to the file and the function
// server.go's dispatch hands it to, and names nothing else: a key added, moved or renamed
// without its row fails here.
func TestDocMapsEveryAPIKey(t *testing.T) {
	bz, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	calls := dispatched(t)
	rows := map[int16]bool{}
	for _, line := range strings.Split(string(bz), "\n") {
		fields := strings.Fields(strings.TrimPrefix(line, "//"))
		if len(fields) < 5 {
			continue
		}
		key, err := strconv.ParseInt(fields[0], 10, 16)
		if err != nil {
			continue
		}
		name, file, handler := fields[1], fields[2], fields[3]
		require.Equal(t, kmsg.NameForKey(int16(key)), name, "doc.go: key %d", key)
		_, served := versions[kmsg.Key(key)]
		require.True(t, served, "doc.go lists %s (key %d), which versions.go does not serve", name, key)
		require.False(t, rows[int16(key)], "doc.go lists key %d twice", key)
		rows[int16(key)] = true
		require.Equal(t, calls[name], handler, "doc.go: %s is handed to %s by dispatch", name, calls[name])
		require.True(t, declares(t, file, handler), "doc.go: %s declares no %s", file, handler)
	}
	for key := range versions {
		require.True(t, rows[int16(key)], "doc.go has no row for %s (key %d)", kmsg.NameForKey(int16(key)), key)
	}
	t.Logf("doc.go maps %d API keys to their files and handlers", len(rows))
}
