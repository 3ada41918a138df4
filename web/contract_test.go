package web_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/paths"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/attune/attune/web"
)

// The API's contract: every response the tests receive from the API goes
// through contractClient, which checks it against the OpenAPI document
// the server serves (status, content type, body schema) and fails the
// test on any difference. At the end of a full run of the package,
// TestMain fails unless every operation of the document had a real
// response checked, so the document can neither drift from the server
// nor describe an endpoint no test calls.

type apiContract struct {
	mu        sync.Mutex // the validator is not documented as safe for concurrent use
	validator validator.Validator
	model     *v3.Document
	seen      map[string]bool // "GET /api/v1/projects/{id}" → a response was checked
}

var contract = sync.OnceValues(func() (*apiContract, error) {
	raw, err := web.OpenAPI()
	if err != nil {
		return nil, err
	}
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		return nil, err
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("validator: %v", errs)
	}
	return &apiContract{validator: v, model: &model.Model, seen: map[string]bool{}}, nil
})

// operations lists the document's operations as "METHOD /path".
func (c *apiContract) operations() []string {
	var out []string
	for path, item := range c.model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			out = append(out, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(out)
	return out
}

// contractClient is an HTTP client whose responses from the API are
// checked against the OpenAPI document; a difference fails t.
func contractClient(t testing.TB) *http.Client {
	return &http.Client{Transport: contractTransport{t: t}}
}

type contractTransport struct{ t testing.TB }

func (ct contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !strings.HasPrefix(req.URL.Path, "/api/v1/") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	c, err := contract()
	if err != nil {
		ct.t.Errorf("the OpenAPI document: %v", err)
		return resp, nil
	}
	check := *resp
	check.Body = io.NopCloser(bytes.NewReader(body))
	c.mu.Lock()
	defer c.mu.Unlock()
	_, notFound, path := paths.FindPath(req, c.model, nil)
	if len(notFound) > 0 {
		// A path the API does not have is a 404 (or a 405 for a method
		// it does not take), as tests of those ask.
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			ct.t.Errorf("%s %s: %d, but the OpenAPI document has no such operation", req.Method, req.URL.Path, resp.StatusCode)
		}
		return resp, nil
	}
	if ok, errs := c.validator.ValidateHttpResponse(req, &check); !ok {
		var msgs []string
		for _, e := range errs {
			msg := e.Message + ": " + e.Reason
			for _, f := range e.SchemaValidationErrors {
				msg += fmt.Sprintf("\n\t%s: %s", f.FieldPath, f.Reason)
			}
			msgs = append(msgs, msg)
		}
		ct.t.Errorf("%s %s: the %d response differs from the OpenAPI document:\n%s\nbody: %.600s",
			req.Method, req.URL.Path, resp.StatusCode, strings.Join(msgs, "\n"), body)
		return resp, nil
	}
	c.seen[req.Method+" "+path] = true
	return resp, nil
}

// contractCoverage is TestMain's last word: after a full run of the
// package that passed, every operation of the document must have had a
// real response checked. A run narrowed with -run or -short proves
// nothing either way and is let be.
func contractCoverage(code int) int {
	if code != 0 || testing.Short() {
		return code
	}
	if f := flag.Lookup("test.run"); f == nil || f.Value.String() != "" {
		return code
	}
	c, err := contract()
	if err != nil {
		fmt.Fprintln(os.Stderr, "the OpenAPI document:", err)
		return 1
	}
	var missing []string
	for _, op := range c.operations() {
		if !c.seen[op] {
			missing = append(missing, op)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "no test checked a response of these operations of the OpenAPI document:\n\t%s\n", strings.Join(missing, "\n\t"))
		return 1
	}
	return code
}

// TestOpenAPIDocument: the document is valid OpenAPI 3.1, is what the
// server serves without a token, and has exactly the API routes of the
// route table.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	c, err := contract()
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	ok, errs := c.validator.ValidateDocument()
	c.mu.Unlock()
	if !ok {
		t.Fatalf("not a valid OpenAPI document: %v", errs)
	}
	if v := c.model.Version; v != "3.1.0" {
		t.Errorf("OpenAPI %s, want 3.1.0", v)
	}

	a := newApp(t)
	resp, err := contractClient(t).Get(a.srv.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	raw, _ := web.OpenAPI()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(served, raw) || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/openapi.json without a token: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(served))
	}

	var routes []string
	for _, r := range a.web.RouteRules() {
		if strings.Contains(r.Pattern, " /api/") {
			routes = append(routes, r.Pattern)
		}
	}
	sort.Strings(routes)
	ops := c.operations()
	for _, r := range routes {
		if !slices.Contains(ops, r) {
			t.Errorf("route %s is not in the OpenAPI document", r)
		}
	}
	for _, op := range ops {
		if !slices.Contains(routes, op) {
			t.Errorf("the OpenAPI document has %s, which the route table lacks", op)
		}
	}
}
