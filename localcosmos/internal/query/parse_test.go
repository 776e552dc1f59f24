package query

import (
	"encoding/json"
	"testing"
)

func TestSyntaxErrors(t *testing.T) {
	cases := []struct {
		query string
		near  string
	}{
		{"SELECT * FORM c", "FORM"},
		{"SELECT * FROM c WHERE", "WHERE"},
		{"SELECT FROM c", "FROM"},
		{"SELEC * FROM c", "SELEC"},
		{"SELECT * FROM c WHERE c.id == 'a'", "="},
		{"SELECT * FROM c WHERE c.value = 1", "value"},
		{"SELECT c.order FROM c", "order"},
		{"SELECT c.top FROM c", "top"},
		{"SELECT c.id AS value FROM c", "value"},
		{"SELECT * FROM c ORDER c.id", "c"},
		{"SELECT * FROM c LIMIT 10", "LIMIT"},
		{"SELECT * FROM c OFFSET 10", "10"},
		{"SELECT TOP * FROM c", "*"},
		{"SELECT TOP c.n * FROM c", "c"},
		{"SELECT *, c.id FROM c", ","},
		{"SELECT VALUE * FROM c", "*"},
		{"SELECT * FROM c WHERE c.id = 'unterminated", "'unterminated"},
		{"SELECT * FROM c WHERE c.id = 'bad \\q escape'", "\\q"},
		{"SELECT * FROM c WHERE c.n IN ()", ")"},
		{"SELECT * FROM c WHERE (c.n = 1", "1"},
		{"SELECT * FROM c WHERE c.n = 1 c.m = 2", "c"},
		{"SELECT * FROM c WHERE c.n ! = 1", "!"},
		{"SELECT * FROM c WHERE c.a BETWEEN 1", "1"},
		{"SELECT COUNT(*) FROM c", "*"},
		{"SELECT * FROM c GROUP c.a", "c"},
		{"SELECT * FROM c WHERE c.x = #", "#"},
		{"SELECT * FROM c WHERE @ = 1", "@"},
		{"SELECT * FROM c AS WHERE c.id = 1", "WHERE"},
		{"SELECT TOP 1 DISTINCT * FROM c", "DISTINCT"},
		{"SELECT * FROM c WHERE c.$type = 1", "$"},
		{"", ""},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			_, err := Parse(tc.query)
			if err == nil {
				t.Fatal("want syntax error")
			}
			e := asQueryError(t, err)
			if code := scCode(t, e); code != "SC1001" {
				t.Fatalf("want SC1001, got %q (%s)", code, e.Message)
			}
			want := "Syntax error, incorrect syntax near '" + tc.near + "'."
			if tc.query == "" {
				want = "Syntax error, incorrect syntax near ''."
			}
			if e.Detail() != want {
				t.Fatalf("got %q, want %q", e.Detail(), want)
			}
		})
	}
}

func TestSyntaxErrorBodyShape(t *testing.T) {
	_, err := Parse("SELECT * FORM c")
	e := asQueryError(t, err)
	// The service's message is a JSON document; clients parse it.
	want := `{"errors":[{"severity":"Error","location":{"start":9,"end":13},"code":"SC1001","message":"Syntax error, incorrect syntax near 'FORM'."}]}`
	if e.Message != want {
		t.Fatalf("got  %s\nwant %s", e.Message, want)
	}
	var v any
	if err := json.Unmarshal([]byte(e.Message), &v); err != nil {
		t.Fatalf("message is not JSON: %v", err)
	}
	if e.Error() == "" || e.SubStatus != 0 {
		t.Fatalf("bad error: %#v", e)
	}
}

func TestSemanticErrors(t *testing.T) {
	cases := []struct {
		query  string
		code   string // SC code, "" for {"Errors":[...]} messages
		detail string
	}{
		{"SELECT * FROM c WHERE d.id = 1", "SC2001", "Identifier 'd' could not be resolved."},
		{"SELECT * FROM root r WHERE root.id = 1", "SC2001", "Identifier 'root' could not be resolved."},
		{"SELECT x FROM c", "SC2001", "Identifier 'x' could not be resolved."},
		{"SELECT * FROM c WHERE c.active = TRUE", "SC2001", "Identifier 'TRUE' could not be resolved."},
		{"SELECT * FROM c WHERE c.x = NULL", "SC2001", "Identifier 'NULL' could not be resolved."},
		{"SELECT c.id ORDER BY c.id", "SC2001", "Identifier 'c' could not be resolved."},
		{"SELECT * FROM c WHERE FOO(c.x)", "SC2005", "'FOO' is not a recognized built-in function name."},
		{"SELECT * FROM c WHERE STARTSWITH(c.x)", "SC2050", "The STARTSWITH function requires 2 to 3 argument(s)."},
		{"SELECT * FROM c WHERE IS_DEFINED(c.x, c.y)", "SC2050", "The IS_DEFINED function requires 1 argument(s)."},
		{"SELECT VALUE COUNT() FROM c", "SC2050", "The COUNT function requires 1 argument(s)."},
		{"SELECT VALUE CONCAT('a') FROM c", "SC2050", "The CONCAT function requires at least 2 argument(s)."},
		{"SELECT *", "", "'SELECT *' is not valid if FROM clause is omitted."},
		{"SELECT * FROM c WHERE COUNT(1) > 1", "", "Aggregate function 'COUNT' is only allowed in the SELECT clause."},
		{"SELECT VALUE SUM(COUNT(1)) FROM c", "", "Cannot perform an aggregate function on an expression containing an aggregate: 'COUNT' inside 'SUM'."},
		{"SELECT c.id, COUNT(1) FROM c", "",
			"Property reference 'c.id' is invalid in the select list because it is not contained in either an aggregate function or the GROUP BY clause."},
		{"SELECT c.a, c.b FROM c GROUP BY c.a", "",
			"Property reference 'c.b' is invalid in the select list because it is not contained in either an aggregate function or the GROUP BY clause."},
		{"SELECT * FROM c GROUP BY c.a", "", "'SELECT *' is not valid with GROUP BY."},
		{"SELECT VALUE [COUNT(1), SUM(MAX(c.x))] FROM c", "", "Cannot perform an aggregate function on an expression containing an aggregate: 'MAX' inside 'SUM'."},
		{"SELECT t, COUNT(1) AS n FROM c JOIN t IN c.tags", "",
			"Property reference 't' is invalid in the select list because it is not contained in either an aggregate function or the GROUP BY clause."},
		{"SELECT c.tags[0], COUNT(1) AS n FROM c", "",
			"Property reference 'c.tags[0]' is invalid in the select list because it is not contained in either an aggregate function or the GROUP BY clause."},
		{"SELECT * FROM c JOIN t IN c.tags", "", "'SELECT *' is only valid with a single input set."},
		{"SELECT VALUE 1 FROM c JOIN c IN c.tags", "", "The input set name or alias 'c' is specified more than once in the FROM clause."},
		{"SELECT VALUE t FROM c JOIN t IN u.tags", "SC2001", "Identifier 'u' could not be resolved."},
		{"SELECT VALUE t FROM c JOIN t IN t.tags", "SC2001", "Identifier 't' could not be resolved."},
		{"SELECT VALUE c.id FROM t IN c.tags", "SC2001", "Identifier 'c' could not be resolved."},
		{"SELECT c.id, c.child.id FROM c", "", "The property name 'id' is specified more than once in the SELECT list."},
		{"SELECT TOP -1 * FROM c", "", "The count value provided for a TOP, OFFSET or LIMIT clause must be a non-negative integer; got -1."},
		{"SELECT TOP 1.5 * FROM c", "", "The count value provided for a TOP, OFFSET or LIMIT clause must be a non-negative integer; got 1.5."},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			_, err := Parse(tc.query)
			if err == nil {
				t.Fatal("want error")
			}
			e := asQueryError(t, err)
			if got := scCode(t, e); got != tc.code {
				t.Fatalf("code %q, want %q (%s)", got, tc.code, e.Message)
			}
			if e.Detail() != tc.detail {
				t.Fatalf("got %q\nwant %q", e.Detail(), tc.detail)
			}
		})
	}
}

func TestSyntaxErrorsBeatSemanticErrors(t *testing.T) {
	_, err := Parse("SELECT FOO(d.x) FROM c WHERE")
	if code := scCode(t, asQueryError(t, err)); code != "SC1001" {
		t.Fatalf("want the syntax error first, got %s", code)
	}
}

func TestUnsupportedConstructs(t *testing.T) {
	for _, text := range []string{
		"SELECT * FROM (SELECT * FROM c) x",
		"SELECT VALUE c.id FROM c JOIN (SELECT VALUE t FROM t IN c.tags) x",
		"SELECT VALUE (SELECT VALUE 1)",
		"SELECT * FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags)",
		"SELECT ARRAY(SELECT VALUE t FROM t IN c.tags) AS a FROM c",
		"SELECT * FROM c WHERE udf.myFunc(c.x)",
		"SELECT c.a, COUNT(1) AS n FROM c GROUP BY c.a ORDER BY c.a",
	} {
		t.Run(text, func(t *testing.T) {
			_, err := Parse(text)
			if err == nil {
				t.Fatal("want error")
			}
			e := asQueryError(t, err)
			if !contains(e.Detail(), "cosmostest:") || !contains(e.Detail(), "not supported") {
				t.Fatalf("want a clear cosmostest message, got %q", e.Detail())
			}
		})
	}
}

func TestParseAcceptsValidQueries(t *testing.T) {
	for _, text := range []string{
		"select * from c",
		"SELECT * FROM c WHERE c.id = @id",
		"SELECT c.id FROM c WHERE c.a.b.c = 1 AND c['x'][0] = 2",
		"SELECT VALUE {\"a\": 1, b: [1, 2, {\"c\": null}]}",
		"SELECT DISTINCT TOP 10 VALUE c.x FROM c",
		"SELECT * FROM c ORDER BY c.a DESC, c.b ASC OFFSET @o LIMIT @l",
		"SELECT c.pk, COUNT(1) AS n, MAX(c.ts) AS last FROM c GROUP BY c.pk",
		"SELECT * FROM c WHERE c.a NOT IN (1, 2) AND c.b NOT LIKE 'x%' AND c.c NOT BETWEEN 1 AND 2",
		"SELECT * FROM c WHERE LEFT(c.s, 2) = 'ab' AND RIGHT(c.s, 1) = 'z'",
		"SELECT VALUE c.all FROM c WHERE c.first = c.last",
		"SELECT\n\t*\nFROM\r\n c",
		"SELECT * FROM c WHERE c.x = 1e-3 OR c.y = .5",
	} {
		if _, err := Parse(text); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
}

func TestDeepEqualityAndCanonicalKeys(t *testing.T) {
	a := map[string]any{"x": []any{1.0, map[string]any{"y": nil}}, "z": "s"}
	b := map[string]any{"z": "s", "x": []any{float64(1), map[string]any{"y": nil}}}
	c := map[string]any{"z": "s", "x": []any{1.0, map[string]any{"y": false}}}
	if !deepEqual(a, b) || canonKey(a) != canonKey(b) {
		t.Fatal("equal objects differ")
	}
	if deepEqual(a, c) || canonKey(a) == canonKey(c) {
		t.Fatal("different objects equal")
	}
	if deepEqual([]any{1.0}, []any{"1"}) || canonKey(1.0) == canonKey("1") {
		t.Fatal("1 and '1' must differ")
	}
	if canonKey(nil) == canonKey(undefined) {
		t.Fatal("null and undefined must differ")
	}
	if !deepEqual(canon(3), 3.0) || canonKey(canon(3)) != canonKey(3.0) {
		t.Fatal("ints must normalise to float64")
	}
}
