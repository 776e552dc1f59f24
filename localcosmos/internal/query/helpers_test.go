package query

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// fixture is the document set most execution tests run over, in insertion order.
const fixture = `[
 {"id":"a","pk":"p1","n":1,"s":"apple","b":true,"nul":null,"arr":[1,2,3],"obj":{"x":1,"y":"z"},"tags":["red","green"],"nested":{"deep":{"v":10}},"value":"kw"},
 {"id":"b","pk":"p1","n":2,"s":"Banana","b":false,"arr":[],"obj":{"x":2},"tags":["blue"],"items":[{"k":"a","v":1},{"k":"b","v":2}]},
 {"id":"c","pk":"p2","n":3,"s":"cherry","nul":null,"mixed":"str"},
 {"id":"d","pk":"p2","n":"4","mixed":5},
 {"id":"e","pk":"p3","n":null,"s":"","mixed":true}
]`

func docsFrom(t testing.TB, js string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	if err := json.Unmarshal([]byte(js), &docs); err != nil {
		t.Fatalf("bad fixture: %v", err)
	}
	return docs
}

// jsonEqual compares a result with the expected JSON text structurally
// (array order matters, object key order does not).
func jsonEqual(t testing.TB, got any, want string) bool {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("marshal result: %v", err)
	}
	var g, w any
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation %q: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// runQuery parses, validates and executes like the server would.
func runQuery(t testing.TB, docs []map[string]any, text string, params Params, opts Options) ([]any, error) {
	t.Helper()
	q, err := Parse(text)
	if err != nil {
		return nil, err
	}
	if err := q.Validate(opts); err != nil {
		return nil, err
	}
	return q.Execute(docs, params, opts)
}

// asQueryError asserts err is a *Error with status 400 and returns it.
func asQueryError(t testing.TB, err error) *Error {
	t.Helper()
	var qe *Error
	if !errors.As(err, &qe) {
		t.Fatalf("want *query.Error, got %T: %v", err, err)
	}
	if qe.Status != 400 || qe.Code != "BadRequest" {
		t.Fatalf("want 400 BadRequest, got %d %s", qe.Status, qe.Code)
	}
	return qe
}

// scCode extracts the SC code from a compilation error's JSON message.
func scCode(t testing.TB, e *Error) string {
	t.Helper()
	var body struct {
		Errors []struct {
			Code     string `json:"code"`
			Message  string `json:"message"`
			Location struct {
				Start int `json:"start"`
				End   int `json:"end"`
			} `json:"location"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(e.Message), &body); err != nil || len(body.Errors) == 0 {
		return ""
	}
	return body.Errors[0].Code
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
