package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
)

// queryProto is the source of openapi.json; the expected routes are read from it so that a
// route added to the proto without `make proto-gen` fails this test.
const queryProto = "../../../../proto/bftlog/topics/v1/query.proto"

func loadV2(t *testing.T) *openapi2.T {
	t.Helper()
	var doc openapi2.T
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json is not a Swagger 2.0 document: %v", err)
	}
	return &doc
}

// TestOpenAPIValid converts the Swagger 2.0 document to OpenAPI 3 (which resolves every
// $ref) and validates it.
func TestOpenAPIValid(t *testing.T) {
	doc2 := loadV2(t)
	if doc2.Swagger != "2.0" {
		t.Fatalf("swagger = %q, want 2.0", doc2.Swagger)
	}
	if doc2.Info.Title != "bftlog x/topics REST API" || doc2.Info.Version != "v1" || doc2.Info.Description == "" {
		t.Fatalf("info = %+v, want the title, description and version set by scripts/protocgen.sh", doc2.Info)
	}
	doc3, err := openapi2conv.ToV3(doc2)
	if err != nil {
		t.Fatalf("converting to OpenAPI 3: %v", err)
	}
	if err := doc3.Validate(context.Background()); err != nil {
		t.Fatalf("OpenAPI 3 validation: %v", err)
	}
	if doc3.Paths.Len() == 0 {
		t.Fatal("no paths after conversion")
	}
}

type route struct{ rpc, method, path string }

var (
	rpcRe  = regexp.MustCompile(`^\s*rpc\s+(\w+)\s*\(`)
	httpRe = regexp.MustCompile(`^\s*option\s+\(google\.api\.http\)\.(get|put|post|delete|patch)\s*=\s*"([^"]+)"`)
)

// protoRoutes returns the HTTP routes of query.proto with the rpc each belongs to.
func protoRoutes(t *testing.T) []route {
	t.Helper()
	src, err := os.ReadFile(queryProto)
	if err != nil {
		t.Fatal(err)
	}
	var routes []route
	rpc := ""
	for _, line := range strings.Split(string(src), "\n") {
		if m := rpcRe.FindStringSubmatch(line); m != nil {
			rpc = m[1]
		}
		if m := httpRe.FindStringSubmatch(line); m != nil {
			routes = append(routes, route{rpc: rpc, method: strings.ToUpper(m[1]), path: m[2]})
		}
	}
	if len(routes) == 0 {
		t.Fatalf("no google.api.http options parsed from %s", queryProto)
	}
	return routes
}

// TestOpenAPIComplete checks the document against the proto both ways: every route of the
// Query service is described with its method, and nothing else is.
func TestOpenAPIComplete(t *testing.T) {
	doc := loadV2(t)
	routes := protoRoutes(t)
	want := map[string]bool{}
	for _, r := range routes {
		want[r.path] = true
		if r.method != http.MethodGet {
			t.Errorf("%s %s: the Query service should only have GET routes", r.method, r.path)
		}
		item := doc.Paths[r.path]
		if item == nil {
			t.Errorf("route %s (%s) is missing from openapi.json: run make proto-gen", r.path, r.rpc)
			continue
		}
		op := item.GetOperation(r.method)
		if op == nil {
			t.Errorf("route %s has no %s operation", r.path, r.method)
			continue
		}
		if op.OperationID != r.rpc {
			t.Errorf("route %s: operationId %q, want %q", r.path, op.OperationID, r.rpc)
		}
		if op.Responses == nil || op.Responses.Value("200") == nil || op.Responses.Value("200").Schema == nil {
			t.Errorf("route %s: no 200 response schema", r.path)
		}
		// Every {param} of the template is a required path parameter.
		for _, m := range regexp.MustCompile(`\{(\w+)\}`).FindAllStringSubmatch(r.path, -1) {
			if p := param(op, m[1]); p == nil || p.In != "path" || !p.Required {
				t.Errorf("route %s: %s is not a required path parameter", r.path, m[1])
			}
		}
	}
	for path := range doc.Paths {
		if !want[path] {
			t.Errorf("openapi.json has %s, which query.proto does not define: run make proto-gen", path)
		}
	}
}

func param(op *openapi2.Operation, name string) *openapi2.Parameter {
	for _, p := range op.Parameters {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// definition follows a local $ref into the document's definitions.
func definition(t *testing.T, doc *openapi2.T, ref string) *openapi2.Schema {
	t.Helper()
	name, ok := strings.CutPrefix(ref, "#/definitions/")
	if !ok || doc.Definitions[name] == nil || doc.Definitions[name].Value == nil {
		t.Fatalf("$ref %q does not name a definition", ref)
	}
	return doc.Definitions[name].Value
}

// TestOpenAPIFetch spot-checks the operation explorers use most.
func TestOpenAPIFetch(t *testing.T) {
	doc := loadV2(t)
	item := doc.Paths["/bftlog/topics/v1/topics/{topic}/partitions/{partition}/records"]
	if item == nil || item.Get == nil {
		t.Fatal("no GET Fetch route")
	}
	op := item.Get
	for name, typ := range map[string]string{"topic": "string", "partition": "integer"} {
		p := param(op, name)
		if p == nil || p.In != "path" || !p.Required || !p.Type.Is(typ) {
			t.Errorf("Fetch path parameter %s: %+v, want a required %s in path", name, p, typ)
		}
	}
	for _, name := range []string{"offset", "max_records", "max_bytes"} {
		if p := param(op, name); p == nil || p.In != "query" || p.Required {
			t.Errorf("Fetch query parameter %s: %+v", name, p)
		}
	}
	// uint64 is a decimal string in proto3 JSON, and so in the gateway's answers.
	if p := param(op, "offset"); p != nil && (!p.Type.Is("string") || p.Format != "uint64") {
		t.Errorf("offset is %v/%s, want string/uint64", p.Type, p.Format)
	}

	ok := op.Responses.Value("200")
	if ok == nil || ok.Schema == nil {
		t.Fatal("Fetch has no 200 response schema")
	}
	resp := definition(t, doc, ok.Schema.Ref)
	for _, name := range []string{"records", "high_watermark", "log_start_offset", "next_offset"} {
		if resp.Properties[name] == nil {
			t.Errorf("Fetch response has no %s property", name)
		}
	}
	records := resp.Properties["records"]
	if records == nil || records.Value == nil || !records.Value.Type.Is("array") || records.Value.Items == nil {
		t.Fatalf("Fetch response records is not an array: %+v", records)
	}
	record := definition(t, doc, records.Value.Items.Ref)
	for _, name := range []string{"offset", "key", "value", "headers", "log_append_time_ms", "producer"} {
		if record.Properties[name] == nil {
			t.Errorf("Record has no %s property", name)
		}
	}
	if !strings.HasSuffix(records.Value.Items.Ref, ".Record") {
		t.Errorf("records items reference %q, want the Record definition", records.Value.Items.Ref)
	}
}

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()

	res, err := http.Get(srv.URL + Path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(res.Body); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if got := res.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("Access-Control-Allow-Origin %q, want *", got)
	}
	if !bytes.Equal(body.Bytes(), OpenAPI) || len(OpenAPI) == 0 {
		t.Errorf("served %d bytes, want the %d embedded bytes", body.Len(), len(OpenAPI))
	}

	if res.ContentLength != int64(len(OpenAPI)) {
		t.Errorf("Content-Length %d, want %d", res.ContentLength, len(OpenAPI))
	}

	for method, want := range map[string]int{
		http.MethodHead:    http.StatusOK,
		http.MethodOptions: http.StatusNoContent,
		http.MethodPost:    http.StatusMethodNotAllowed,
	} {
		req, _ := http.NewRequest(method, srv.URL+Path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("%s: status %d, want %d", method, res.StatusCode, want)
		}
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("%s: Access-Control-Allow-Origin %q, want *", method, got)
		}
	}
}

// TestProtoRoutesDistinct checks that query.proto declares each route once, which the
// one-operation-per-path comparison in TestOpenAPIComplete relies on.
func TestProtoRoutesDistinct(t *testing.T) {
	var paths []string
	for _, r := range protoRoutes(t) {
		paths = append(paths, r.method+" "+r.path)
	}
	slices.Sort(paths)
	if len(slices.Compact(slices.Clone(paths))) != len(paths) {
		t.Fatalf("duplicate routes in query.proto: %v", paths)
	}
}
