package query

import (
	"testing"
)

type execCase struct {
	name   string
	query  string
	params Params
	want   string // expected results as JSON
}

func runExecCases(t *testing.T, docs []map[string]any, opts Options, cases []execCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runQuery(t, docs, tc.query, tc.params, opts)
			if err != nil {
				t.Fatalf("%s: unexpected error: %v", tc.query, err)
			}
			if !jsonEqual(t, got, tc.want) {
				t.Fatalf("%s\n got: %s\nwant: %s", tc.query, mustJSON(got), tc.want)
			}
		})
	}
}

func TestSelectProjections(t *testing.T) {
	docs := docsFrom(t, fixture)
	runExecCases(t, docs, Options{}, []execCase{
		{"star returns whole documents", `SELECT * FROM c WHERE c.id = "c"`, nil,
			`[{"id":"c","pk":"p2","n":3,"s":"cherry","nul":null,"mixed":"str"}]`},
		{"value path", `SELECT VALUE c.id FROM c`, nil, `["a","b","c","d","e"]`},
		{"value of undefined yields no row", `SELECT VALUE c.b FROM c`, nil, `[true,false]`},
		{"value of null is kept", `SELECT VALUE c.nul FROM c`, nil, `[null,null]`},
		{"list names after last segment", `SELECT c.id, c.nested.deep.v FROM c WHERE c.id = 'a'`, nil, `[{"id":"a","v":10}]`},
		{"alias", `SELECT c.id AS key, c.nested.deep.v AS y FROM c WHERE c.id = 'a'`, nil, `[{"key":"a","y":10}]`},
		{"bracket property", `SELECT c["value"], c["id"] AS i FROM c WHERE c.id = 'a'`, nil, `[{"value":"kw","i":"a"}]`},
		{"undefined fields omitted, empty object kept", `SELECT c.b FROM c`, nil, `[{"b":true},{"b":false},{},{},{}]`},
		{"unnamed expressions get $1 $2", `SELECT c.n * 10, c.id, c.n + 1 FROM c WHERE c.id = 'b'`, nil, `[{"$1":20,"id":"b","$2":3}]`},
		{"select alias itself", `SELECT c FROM c WHERE c.id = 'e'`, nil, `[{"c":{"id":"e","pk":"p3","n":null,"s":"","mixed":true}}]`},
		{"object literal with quoted and bare keys", `SELECT VALUE {"k": c.id, n: c.n, missing: c.nope} FROM c WHERE c.id = 'a'`, nil, `[{"k":"a","n":1}]`},
		{"array literal", `SELECT VALUE [c.id, c.n] FROM c WHERE c.id = 'b'`, nil, `[["b",2]]`},
		{"array literal drops undefined", `SELECT VALUE [c.id, c.nope, 1] FROM c WHERE c.id = 'b'`, nil, `[["b",1]]`},
		{"array index", `SELECT VALUE c.arr[1] FROM c`, nil, `[2]`},
		{"computed index", `SELECT VALUE c.tags[c.n - 1] FROM c WHERE c.id = 'a'`, nil, `["red"]`},
		{"parameter index", `SELECT VALUE c[@f] FROM c WHERE c.id = 'a'`, Params{"@f": "s"}, `["apple"]`},
		{"nested array of objects", `SELECT VALUE c.items[1].k FROM c`, nil, `["b"]`},
		{"no FROM", `SELECT 1 AS one, 'x' || 'y' AS xy`, nil, `[{"one":1,"xy":"xy"}]`},
		{"no FROM value", `SELECT VALUE 2 * 3`, nil, `[6]`},
		{"FROM root r", `SELECT VALUE r.id FROM root r WHERE r.n = 2`, nil, `["b"]`},
		{"FROM c AS x", `SELECT VALUE x.id FROM c AS x WHERE x.n = 3`, nil, `["c"]`},
		{"any collection name", `SELECT VALUE Families.id FROM Families WHERE Families.n = 1`, nil, `["a"]`},
		{"keywords are case-insensitive", `select value C.id from C where C.n = 1 or C.n = 2 order by C.id desc`, nil, `["b","a"]`},
		{"identifiers are case-sensitive", `SELECT VALUE c.ID FROM c`, nil, `[]`},
		{"ALL FIRST LAST usable as identifiers", `SELECT VALUE {a: first.id} FROM first WHERE first.n = 1`, nil, `[{"a":"a"}]`},
	})
}

func TestOperators(t *testing.T) {
	docs := docsFrom(t, fixture)
	runExecCases(t, docs, Options{}, []execCase{
		{"equality string single quotes", `SELECT VALUE c.id FROM c WHERE c.s = 'apple'`, nil, `["a"]`},
		{"equality double quotes", `SELECT VALUE c.id FROM c WHERE c.s = "apple"`, nil, `["a"]`},
		{"not equal includes other types, skips undefined", `SELECT VALUE c.id FROM c WHERE c.n != 1`, nil, `["b","c","d","e"]`},
		{"<> is not equal", `SELECT VALUE c.id FROM c WHERE c.n <> 1`, nil, `["b","c","d","e"]`},
		{"range on numbers ignores strings", `SELECT VALUE c.id FROM c WHERE c.n >= 2`, nil, `["b","c"]`},
		{"range on strings ignores numbers", `SELECT VALUE c.id FROM c WHERE c.n > '0'`, nil, `["d"]`},
		{"string ordering is ordinal (upper before lower)", `SELECT VALUE c.id FROM c WHERE c.s < 'a'`, nil, `["b","e"]`},
		{"AND", `SELECT VALUE c.id FROM c WHERE c.pk = 'p1' AND c.n > 1`, nil, `["b"]`},
		{"OR", `SELECT VALUE c.id FROM c WHERE c.n = 1 OR c.s = 'cherry'`, nil, `["a","c"]`},
		{"NOT parenthesised", `SELECT VALUE c.id FROM c WHERE NOT (c.pk = 'p1')`, nil, `["c","d","e"]`},
		{"NOT binds tighter than =", `SELECT VALUE c.id FROM c WHERE NOT c.b = true`, nil, `["b"]`},
		{"NOT of a non-boolean is undefined", `SELECT VALUE c.id FROM c WHERE NOT c.s = false`, nil, `[]`},
		{"IN", `SELECT VALUE c.id FROM c WHERE c.n IN (1, 3, '4')`, nil, `["a","c","d"]`},
		{"IN strings", `SELECT VALUE c.id FROM c WHERE c.pk IN ('p2')`, nil, `["c","d"]`},
		{"NOT IN keeps other types, drops undefined", `SELECT VALUE c.id FROM c WHERE c.n NOT IN (1, 2)`, nil, `["c","d","e"]`},
		{"NOT IN", `SELECT VALUE c.id FROM c WHERE c.pk NOT IN ('p1', 'p3')`, nil, `["c","d"]`},
		{"IN with parameter array compares whole array", `SELECT VALUE c.id FROM c WHERE c.id IN (@ids)`, Params{"@ids": []any{"a", "b"}}, `[]`},
		{"IN with parameters", `SELECT VALUE c.id FROM c WHERE c.id IN (@x, @y)`, Params{"@x": "a", "@y": "e"}, `["a","e"]`},
		{"BETWEEN", `SELECT VALUE c.id FROM c WHERE c.n BETWEEN 2 AND 3`, nil, `["b","c"]`},
		{"NOT BETWEEN", `SELECT VALUE c.id FROM c WHERE c.n NOT BETWEEN 2 AND 3`, nil, `["a"]`},
		{"BETWEEN then AND", `SELECT VALUE c.id FROM c WHERE c.n BETWEEN 1 AND 3 AND c.pk = 'p1'`, nil, `["a","b"]`},
		{"BETWEEN strings", `SELECT VALUE c.id FROM c WHERE c.s BETWEEN 'a' AND 'b'`, nil, `["a"]`},
		{"LIKE percent", `SELECT VALUE c.id FROM c WHERE c.s LIKE '%an%'`, nil, `["b"]`},
		{"LIKE underscore and class", `SELECT VALUE c.id FROM c WHERE c.s LIKE '[ac]_p%'`, nil, `["a"]`},
		{"LIKE negated class", `SELECT VALUE c.id FROM c WHERE c.s LIKE '[^a]%'`, nil, `["b","c"]`},
		{"NOT LIKE", `SELECT VALUE c.id FROM c WHERE c.s NOT LIKE 'a%'`, nil, `["b","c","e"]`},
		{"LIKE escape", `SELECT VALUE 'a%b' LIKE 'a!%b' ESCAPE '!'`, nil, `[true]`},
		{"LIKE edge cases", `SELECT VALUE ['' LIKE '%', '' LIKE '_', 'abc' LIKE 'abc', 'abc' LIKE 'ab', 'aXbYb' LIKE '%a%b', 'ab' LIKE 'a%%b%', 'a[' LIKE 'a[', 'aab' LIKE '%a%a%b', 'ab' LIKE '%a%a%b', 'x' LIKE '[a-z]', 'X' LIKE '[a-z]', 'axb' NOT LIKE 'a_b', 1 LIKE '1']`, nil,
			`[[true,false,true,false,true,true,true,true,false,true,false,false]]`},
		{"arithmetic", `SELECT VALUE [c.n + 1, c.n - 1, c.n * 2, c.n / 2, c.n % 2, -c.n] FROM c WHERE c.id = 'c'`, nil, `[[4,2,6,1.5,1,-3]]`},
		{"arithmetic precedence", `SELECT VALUE 1 + 2 * 3 - 4 / 2`, nil, `[5]`},
		{"+ does not concatenate strings", `SELECT VALUE c.s + 'x' FROM c`, nil, `[]`},
		{"|| concatenates", `SELECT VALUE c.id || '-' || c.s FROM c WHERE c.n = 1`, nil, `["a-apple"]`},
		{"division by zero is undefined", `SELECT VALUE 1 / 0`, nil, `[]`},
		{"ternary", `SELECT VALUE (c.n > 1 ? 'big' : 'small') FROM c WHERE IS_NUMBER(c.n)`, nil, `["small","big","big"]`},
		{"ternary with undefined condition takes else", `SELECT VALUE undefined ? 1 : 2`, nil, `[2]`},
		{"coalesce skips undefined not null", `SELECT VALUE c.b ?? c.nul ?? 'none' FROM c`, nil, `[true,false,null,"none","none"]`},
		{"bitwise", `SELECT VALUE [5 & 3, 5 | 3, 5 ^ 3, ~5, 1 << 4, -16 >> 2, -16 >>> 28]`, nil, `[[1,7,6,-6,16,-4,15]]`},
		{"unary minus on parameter", `SELECT VALUE -@x`, Params{"@x": 2}, `[-2]`},
		{"string escapes", `SELECT VALUE ['it\'s', "say \"hi\"", 'tab\there', '\u00e9', "\\"]`, nil, `[["it's","say \"hi\"","tab\there","é","\\"]]`},
		{"number literal forms", `SELECT VALUE [1.5, .5, 1e3, 2E-2, 10]`, nil, `[[1.5,0.5,1000,0.02,10]]`},
		{"true false null undefined literals", `SELECT VALUE [true, false, null, undefined]`, nil, `[[true,false,null]]`},
		{"WHERE keeps only exactly true", `SELECT VALUE c.id FROM c WHERE c.n`, nil, `[]`},
		{"WHERE boolean property", `SELECT VALUE c.id FROM c WHERE c.b`, nil, `["a"]`},
	})
}

// TestUndefinedNullTruthTable checks Cosmos's three-valued semantics one
// expression at a time. An expected value of "undefined" means the
// expression yields undefined, which SELECT VALUE turns into no row.
func TestUndefinedNullTruthTable(t *testing.T) {
	cases := []struct{ expr, want string }{
		// Equality and comparison.
		{"undefined = null", "undefined"},
		{"undefined = undefined", "undefined"},
		{"null = null", "true"},
		{"null != null", "false"},
		{"null < null", "false"},
		{"null <= null", "true"},
		{"1 = '1'", "false"},
		{"1 != '1'", "true"},
		{"null = 0", "false"},
		{"'x' != null", "true"},
		{"1 < 'a'", "undefined"},
		{"true = 1", "false"},
		{"true > 1", "undefined"},
		{"null < 1", "undefined"},
		{"false < true", "true"},
		{"1 = 1.0", "true"},
		{"'a' = 'a'", "true"},
		{"'a' < 'b'", "true"},
		{"'B' < 'a'", "true"},
		{"[1,2] = [1,2]", "true"},
		{"[1,2] = [2,1]", "false"},
		{"{\"a\":1,\"b\":[1]} = {\"b\":[1],\"a\":1}", "true"},
		{"{\"a\":1} = {\"a\":1,\"b\":2}", "false"},
		{"{\"a\":1} = {\"a\":\"1\"}", "false"},
		{"[1] < [2]", "undefined"},
		{"{\"a\":1} != {\"a\":2}", "true"},
		{"{\"a\":1} < {\"a\":2}", "undefined"},
		{"[] = {}", "false"},
		// AND.
		{"true AND true", "true"},
		{"true AND false", "false"},
		{"true AND undefined", "undefined"},
		{"false AND undefined", "false"},
		{"undefined AND false", "false"},
		{"undefined AND undefined", "undefined"},
		{"true AND 1", "undefined"},
		{"false AND 'x'", "false"},
		// OR.
		{"true OR undefined", "true"},
		{"undefined OR true", "true"},
		{"false OR undefined", "undefined"},
		{"false OR false", "false"},
		{"undefined OR undefined", "undefined"},
		{"null OR true", "true"},
		// NOT.
		{"NOT true", "false"},
		{"NOT false", "true"},
		{"NOT undefined", "undefined"},
		{"NOT null", "undefined"},
		{"NOT 0", "undefined"},
		// IN / BETWEEN.
		{"undefined IN (1)", "undefined"},
		{"undefined NOT IN (1)", "undefined"},
		{"1 IN ('1')", "false"},
		{"1 NOT IN ('1')", "true"},
		{"null IN (null)", "true"},
		{"2 BETWEEN 1 AND 3", "true"},
		{"2 BETWEEN 'a' AND 3", "undefined"},
		{"NOT (2 BETWEEN 'a' AND 3)", "undefined"},
		{"5 BETWEEN 'a' AND 3", "false"},
		{"undefined BETWEEN 1 AND 3", "undefined"},
		// Arithmetic on wrong types.
		{"1 + null", "undefined"},
		{"'a' + 'b'", "undefined"},
		{"'a' || 1", "undefined"},
		{"-'a'", "undefined"},
		// Type checks never return undefined.
		{"IS_DEFINED(undefined)", "false"},
		{"IS_DEFINED(null)", "true"},
		{"IS_NULL(undefined)", "false"},
		{"IS_NULL(null)", "true"},
		// Coalesce.
		{"undefined ?? null", "null"},
		{"null ?? 1", "null"},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := runQuery(t, nil, "SELECT VALUE "+tc.expr, nil, Options{})
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			want := "[" + tc.want + "]"
			if tc.want == "undefined" {
				want = "[]"
			}
			if !jsonEqual(t, got, want) {
				t.Fatalf("%s = %s, want %s", tc.expr, mustJSON(got), tc.want)
			}
		})
	}
}

func TestNullAndUndefinedFilters(t *testing.T) {
	docs := docsFrom(t, fixture)
	runExecCases(t, docs, Options{}, []execCase{
		{"= null matches only explicit nulls", `SELECT VALUE c.id FROM c WHERE c.nul = null`, nil, `["a","c"]`},
		{"!= null matches defined non-null values", `SELECT VALUE c.id FROM c WHERE c.n != null`, nil, `["a","b","c","d"]`},
		{"NOT (= null) also drops undefined", `SELECT VALUE c.id FROM c WHERE NOT (c.nul = null)`, nil, `[]`},
		{"undefined = null matches nothing", `SELECT VALUE c.id FROM c WHERE c.missing = null`, nil, `[]`},
		{"IS_DEFINED", `SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.nul)`, nil, `["a","c"]`},
		{"NOT IS_DEFINED", `SELECT VALUE c.id FROM c WHERE NOT IS_DEFINED(c.nul)`, nil, `["b","d","e"]`},
		{"IS_NULL", `SELECT VALUE c.id FROM c WHERE IS_NULL(c.n)`, nil, `["e"]`},
		{"missing or false", `SELECT VALUE c.id FROM c WHERE c.b = false OR NOT IS_DEFINED(c.b)`, nil, `["b","c","d","e"]`},
		{"literal TRUE upper case is an identifier, not true", `SELECT VALUE c.id FROM c WHERE c.b = true`, nil, `["a"]`},
	})
}

func TestParameters(t *testing.T) {
	docs := docsFrom(t, fixture)
	runExecCases(t, docs, Options{}, []execCase{
		{"string param", `SELECT VALUE c.id FROM c WHERE c.id = @id`, Params{"@id": "b"}, `["b"]`},
		{"number param", `SELECT VALUE c.id FROM c WHERE c.n >= @min`, Params{"@min": float64(2)}, `["b","c"]`},
		{"int param is normalised", `SELECT VALUE c.id FROM c WHERE c.n = @n`, Params{"@n": 3}, `["c"]`},
		{"null param", `SELECT VALUE c.id FROM c WHERE c.n = @n`, Params{"@n": nil}, `["e"]`},
		{"bool param", `SELECT VALUE c.id FROM c WHERE c.b = @b`, Params{"@b": false}, `["b"]`},
		{"array param with ARRAY_CONTAINS", `SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(@ids, c.id)`, Params{"@ids": []any{"e", "a"}}, `["a","e"]`},
		{"typed slice param", `SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(@ids, c.id)`, Params{"@ids": []string{"c"}}, `["c"]`},
		{"object param deep equality", `SELECT VALUE c.id FROM c WHERE c.obj = @o`, Params{"@o": map[string]any{"y": "z", "x": 1.0}}, `["a"]`},
		{"missing param is undefined", `SELECT VALUE c.id FROM c WHERE c.id = @nope`, nil, `[]`},
		{"missing param in NOT IS_DEFINED", `SELECT VALUE c.id FROM c WHERE NOT IS_DEFINED(@nope) AND c.n = 1`, nil, `["a"]`},
		{"param in projection", `SELECT @p AS p, c.id FROM c WHERE c.id = 'a'`, Params{"@p": []any{1.0, "x"}}, `[{"p":[1,"x"],"id":"a"}]`},
		{"param names are case-sensitive", `SELECT VALUE c.id FROM c WHERE c.id = @Id`, Params{"@id": "a"}, `[]`},
	})
}

func TestFunctions(t *testing.T) {
	docs := docsFrom(t, fixture)
	runExecCases(t, docs, Options{}, []execCase{
		{"type checks", `SELECT VALUE [IS_STRING(c.s), IS_NUMBER(c.n), IS_BOOL(c.b), IS_ARRAY(c.arr), IS_OBJECT(c.obj), IS_PRIMITIVE(c.obj), IS_PRIMITIVE(c.nul)] FROM c WHERE c.id = 'a'`, nil,
			`[[true,true,true,true,true,false,true]]`},
		{"type checks on undefined are false", `SELECT VALUE [IS_STRING(c.x), IS_NUMBER(c.x), IS_BOOL(c.x), IS_ARRAY(c.x), IS_OBJECT(c.x), IS_NULL(c.x), IS_DEFINED(c.x)] FROM c WHERE c.id = 'a'`, nil,
			`[[false,false,false,false,false,false,false]]`},
		{"function names are case-insensitive", `SELECT VALUE c.id FROM c WHERE is_defined(c.b) AND StartsWith(c.s, 'a')`, nil, `["a"]`},
		{"ARRAY_CONTAINS", `SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.tags, 'blue')`, nil, `["b"]`},
		{"ARRAY_CONTAINS number", `SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.arr, 2)`, nil, `["a"]`},
		{"ARRAY_CONTAINS object needs full match", `SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.items, {"k": "a"})`, nil, `[]`},
		{"ARRAY_CONTAINS object full match", `SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.items, {"k": "a", "v": 1})`, nil, `["b"]`},
		{"ARRAY_CONTAINS partial", `SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.items, {"k": "a"}, true)`, nil, `["b"]`},
		{"ARRAY_CONTAINS on non-array is undefined", `SELECT VALUE ARRAY_CONTAINS(c.s, 'a') FROM c WHERE c.id = 'a'`, nil, `[]`},
		{"NOT ARRAY_CONTAINS skips missing arrays", `SELECT VALUE c.id FROM c WHERE NOT ARRAY_CONTAINS(c.tags, 'red')`, nil, `["b"]`},
		{"ARRAY_LENGTH", `SELECT VALUE ARRAY_LENGTH(c.arr) FROM c`, nil, `[3,0]`},
		{"ARRAY_CONCAT and ARRAY_SLICE", `SELECT VALUE [ARRAY_CONCAT([1], [2, 3]), ARRAY_SLICE([1,2,3,4], 1, 2), ARRAY_SLICE([1,2,3], -1)]`, nil, `[[[1,2,3],[2,3],[3]]]`},
		{"STARTSWITH", `SELECT VALUE c.id FROM c WHERE STARTSWITH(c.s, 'b')`, nil, `[]`},
		{"STARTSWITH ignore case", `SELECT VALUE c.id FROM c WHERE STARTSWITH(c.s, 'b', true)`, nil, `["b"]`},
		{"ENDSWITH", `SELECT VALUE c.id FROM c WHERE ENDSWITH(c.s, 'rry')`, nil, `["c"]`},
		{"CONTAINS", `SELECT VALUE c.id FROM c WHERE CONTAINS(c.s, 'AN', true)`, nil, `["b"]`},
		{"CONTAINS case-sensitive", `SELECT VALUE c.id FROM c WHERE CONTAINS(c.s, 'AN')`, nil, `[]`},
		{"string functions on non-strings are undefined", `SELECT VALUE STARTSWITH(c.n, '1') FROM c WHERE IS_NUMBER(c.n)`, nil, `[]`},
		{"LENGTH LOWER UPPER", `SELECT VALUE [LENGTH(c.s), LOWER(c.s), UPPER(c.s)] FROM c WHERE c.id = 'b'`, nil, `[[6,"banana","BANANA"]]`},
		{"LENGTH counts characters", `SELECT VALUE LENGTH('héllo')`, nil, `[5]`},
		{"SUBSTRING", `SELECT VALUE [SUBSTRING('abcdef', 1, 3), SUBSTRING('abc', 2, 10), SUBSTRING('abc', 5, 1)]`, nil, `[["bcd","c",""]]`},
		{"CONCAT", `SELECT VALUE CONCAT(c.id, '-', c.s) FROM c WHERE c.id = 'a'`, nil, `["a-apple"]`},
		{"CONCAT with a non-string is undefined", `SELECT VALUE CONCAT(c.id, c.n) FROM c WHERE IS_NUMBER(c.n)`, nil, `[]`},
		{"INDEX_OF REPLACE TRIM", `SELECT VALUE [INDEX_OF('abcabc', 'c'), INDEX_OF('abc', 'z'), REPLACE('aXbX', 'X', '-'), TRIM('  x  '), LTRIM(' x'), RTRIM('x ')]`, nil, `[[2,-1,"a-b-","x","x","x"]]`},
		{"REPLICATE refuses results over 10,000 characters", `SELECT VALUE [LENGTH(REPLICATE('ab', 5000)), IS_DEFINED(REPLICATE('ab', 5001))]`, nil, `[[10000,false]]`},
		{"LEFT RIGHT REVERSE REPLICATE", `SELECT VALUE [LEFT('abc', 2), RIGHT('abc', 2), REVERSE('abc'), REPLICATE('ab', 2)]`, nil, `[["ab","bc","cba","abab"]]`},
		{"math", `SELECT VALUE [ABS(-2), FLOOR(1.7), CEILING(1.2), ROUND(2.5), ROUND(-2.5), ROUND(1.4), TRUNC(-1.7), SIGN(-3), SQRT(9), POWER(2, 10)]`, nil, `[[2,1,2,3,-3,1,-1,-1,3,1024]]`},
		{"math on non-number is undefined", `SELECT VALUE ABS('x')`, nil, `[]`},
		{"IIF", `SELECT VALUE IIF(c.b, 'yes', 'no') FROM c`, nil, `["yes","no","no","no","no"]`},
	})
}

func TestOrderBy(t *testing.T) {
	docs := docsFrom(t, fixture)
	composite := IndexPolicy{CompositeIndexes: [][]CompositePath{
		{{Path: "/pk", Order: "ascending"}, {Path: "/n", Order: "descending"}},
	}}
	runExecCases(t, docs, Options{}, []execCase{
		{"asc numbers, undefined excluded, mixed types by type", `SELECT VALUE c.id FROM c ORDER BY c.n`, nil, `["e","a","b","c","d"]`},
		{"desc", `SELECT VALUE c.id FROM c ORDER BY c.n DESC`, nil, `["d","c","b","a","e"]`},
		{"explicit ASC", `SELECT VALUE c.id FROM c ORDER BY c.s ASC`, nil, `["e","b","a","c"]`},
		{"undefined sort values excluded with default index", `SELECT VALUE c.id FROM c ORDER BY c.b`, nil, `["b","a"]`},
		{"mixed types: bool < number < string", `SELECT VALUE c.mixed FROM c ORDER BY c.mixed`, nil, `[true,5,"str"]`},
		{"ties keep insertion order", `SELECT VALUE c.id FROM c ORDER BY c.pk`, nil, `["a","b","c","d","e"]`},
		{"ties keep insertion order desc", `SELECT VALUE c.id FROM c ORDER BY c.pk DESC`, nil, `["e","c","d","a","b"]`},
		{"order by nested path", `SELECT VALUE c.id FROM c ORDER BY c.obj.x DESC`, nil, `["b","a"]`},
		{"order by bracket path", `SELECT VALUE c.id FROM c ORDER BY c["s"]`, nil, `["e","b","a","c"]`},
		{"order by with where and projection", `SELECT c.id FROM c WHERE c.pk = 'p1' ORDER BY c.n DESC`, nil, `[{"id":"b"},{"id":"a"}]`},
		{"arrays and objects count as undefined", `SELECT VALUE c.id FROM c ORDER BY c.obj`, nil, `[]`},
	})
	t.Run("explicitly included path keeps undefined first", func(t *testing.T) {
		opts := Options{Index: IndexPolicy{IncludedPaths: []string{"/b/?", "/*"}}}
		got, err := runQuery(t, docs, `SELECT VALUE c.id FROM c ORDER BY c.b`, nil, opts)
		if err != nil || !jsonEqual(t, got, `["c","d","e","b","a"]`) {
			t.Fatalf("got %s, %v", mustJSON(got), err)
		}
		got, err = runQuery(t, docs, `SELECT VALUE c.id FROM c ORDER BY c.b DESC`, nil, opts)
		if err != nil || !jsonEqual(t, got, `["a","b","c","d","e"]`) {
			t.Fatalf("desc: got %s, %v", mustJSON(got), err)
		}
	})
	t.Run("composite ORDER BY keeps undefined", func(t *testing.T) {
		got, err := runQuery(t, docs, `SELECT VALUE c.id FROM c ORDER BY c.pk ASC, c.n DESC`, nil, Options{Index: composite})
		if err != nil || !jsonEqual(t, got, `["b","a","d","c","e"]`) {
			t.Fatalf("got %s, %v", mustJSON(got), err)
		}
		got, err = runQuery(t, docs, `SELECT VALUE c.id FROM c ORDER BY c.pk DESC, c.n ASC`, nil, Options{Index: composite})
		if err != nil || !jsonEqual(t, got, `["e","c","d","a","b"]`) {
			t.Fatalf("reversed: got %s, %v", mustJSON(got), err)
		}
		extra := append(docsFrom(t, fixture), map[string]any{"id": "f", "n": 9.0})
		got, err = runQuery(t, extra, `SELECT VALUE c.id FROM c ORDER BY c.pk ASC, c.n DESC`, nil, Options{Index: composite})
		if err != nil || !jsonEqual(t, got, `["f","b","a","d","c","e"]`) {
			t.Fatalf("undefined pk: got %s, %v", mustJSON(got), err)
		}
	})
}

func TestDistinctTopOffsetLimit(t *testing.T) {
	docs := docsFrom(t, fixture)
	runExecCases(t, docs, Options{}, []execCase{
		{"DISTINCT VALUE", `SELECT DISTINCT VALUE c.pk FROM c`, nil, `["p1","p2","p3"]`},
		{"DISTINCT objects", `SELECT DISTINCT c.pk FROM c`, nil, `[{"pk":"p1"},{"pk":"p2"},{"pk":"p3"}]`},
		{"DISTINCT deep equality ignores key order", `SELECT DISTINCT VALUE (c.id = 'a' ? {"x":1,"y":[1]} : {"y":[1],"x":1}) FROM c`, nil, `[{"x":1,"y":[1]}]`},
		{"DISTINCT keeps 1 and '1' apart", `SELECT DISTINCT VALUE (c.id = 'a' ? 1 : '1') FROM c`, nil, `[1,"1"]`},
		{"DISTINCT with ORDER BY", `SELECT DISTINCT VALUE c.pk FROM c ORDER BY c.pk DESC`, nil, `["p3","p2","p1"]`},
		{"DISTINCT empty objects collapse", `SELECT DISTINCT c.zzz FROM c`, nil, `[{}]`},
		{"TOP literal", `SELECT TOP 2 VALUE c.id FROM c`, nil, `["a","b"]`},
		{"TOP with ORDER BY", `SELECT TOP 2 VALUE c.id FROM c ORDER BY c.id DESC`, nil, `["e","d"]`},
		{"TOP param", `SELECT TOP @n VALUE c.id FROM c`, Params{"@n": float64(3)}, `["a","b","c"]`},
		{"TOP 0", `SELECT TOP 0 * FROM c`, nil, `[]`},
		{"TOP larger than results", `SELECT TOP 100 VALUE c.id FROM c WHERE c.pk = 'p3'`, nil, `["e"]`},
		{"TOP with DISTINCT counts distinct results", `SELECT DISTINCT TOP 2 VALUE c.pk FROM c`, nil, `["p1","p2"]`},
		{"OFFSET LIMIT", `SELECT VALUE c.id FROM c OFFSET 1 LIMIT 2`, nil, `["b","c"]`},
		{"OFFSET LIMIT with ORDER BY", `SELECT VALUE c.id FROM c ORDER BY c.id DESC OFFSET 1 LIMIT 3`, nil, `["d","c","b"]`},
		{"OFFSET past the end", `SELECT VALUE c.id FROM c OFFSET 10 LIMIT 2`, nil, `[]`},
		{"LIMIT 0", `SELECT VALUE c.id FROM c OFFSET 0 LIMIT 0`, nil, `[]`},
		{"OFFSET LIMIT params", `SELECT VALUE c.id FROM c OFFSET @o LIMIT @l`, Params{"@o": 3, "@l": 5}, `["d","e"]`},
		{"OFFSET LIMIT after DISTINCT", `SELECT DISTINCT VALUE c.pk FROM c OFFSET 1 LIMIT 1`, nil, `["p2"]`},
	})
}

func TestAggregates(t *testing.T) {
	docs := docsFrom(t, fixture)
	runExecCases(t, docs, Options{}, []execCase{
		{"COUNT(1)", `SELECT VALUE COUNT(1) FROM c`, nil, `[5]`},
		{"COUNT with WHERE and param", `SELECT VALUE COUNT(1) FROM c WHERE c.pk = @pk`, Params{"@pk": "p1"}, `[2]`},
		{"COUNT(expr) skips undefined, counts null", `SELECT VALUE COUNT(c.nul) FROM c`, nil, `[2]`},
		{"non-VALUE aggregate gets $1", `SELECT COUNT(1) FROM c`, nil, `[{"$1":5}]`},
		{"several aggregates", `SELECT COUNT(1) AS n, MIN(c.id), MAX(c.id) FROM c`, nil, `[{"n":5,"$1":"a","$2":"e"}]`},
		{"SUM AVG over numbers", `SELECT VALUE [SUM(c.n), AVG(c.n)] FROM c WHERE IS_NUMBER(c.n)`, nil, `[[6,2]]`},
		{"SUM with a string is undefined", `SELECT VALUE SUM(c.n) FROM c`, nil, `[]`},
		{"SUM skips undefined", `SELECT VALUE SUM(c.obj.x) FROM c`, nil, `[3]`},
		{"AVG with null is undefined", `SELECT VALUE AVG(c.n) FROM c WHERE c.pk = 'p3' OR c.n = 1`, nil, `[]`},
		{"MIN MAX mixed types by type order", `SELECT VALUE [MIN(c.n), MAX(c.n)] FROM c`, nil, `[[null,"4"]]`},
		{"MIN of objects is undefined", `SELECT VALUE MIN(c.obj) FROM c`, nil, `[]`},
		{"aggregate in expression", `SELECT VALUE COUNT(1) * 10 FROM c`, nil, `[50]`},
		{"COUNT over empty set is 0", `SELECT VALUE COUNT(1) FROM c WHERE c.id = 'zzz'`, nil, `[0]`},
		{"non-VALUE COUNT over empty set", `SELECT COUNT(1) AS n FROM c WHERE false`, nil, `[{"n":0}]`},
		{"SUM over empty set is 0", `SELECT VALUE SUM(c.n) FROM c WHERE false`, nil, `[0]`},
		{"MIN over empty set yields no row", `SELECT VALUE MIN(c.n) FROM c WHERE false`, nil, `[]`},
		{"MAX over empty set yields no row", `SELECT VALUE MAX(c.n) FROM c WHERE false`, nil, `[]`},
		{"AVG over empty set yields no row", `SELECT VALUE AVG(c.n) FROM c WHERE false`, nil, `[]`},
		{"non-VALUE MIN over empty set is an empty object", `SELECT MIN(c.n) AS m FROM c WHERE false`, nil, `[{}]`},
		{"GROUP BY", `SELECT c.pk, COUNT(1) AS n FROM c GROUP BY c.pk`, nil, `[{"pk":"p1","n":2},{"pk":"p2","n":2},{"pk":"p3","n":1}]`},
		{"GROUP BY VALUE", `SELECT VALUE c.pk FROM c GROUP BY c.pk`, nil, `["p1","p2","p3"]`},
		{"GROUP BY with aggregate of other field", `SELECT c.pk AS k, SUM(c.obj.x) AS s, MAX(c.id) AS last FROM c GROUP BY c.pk`, nil,
			`[{"k":"p1","s":3,"last":"b"},{"k":"p2","s":0,"last":"d"},{"k":"p3","s":0,"last":"e"}]`},
		{"GROUP BY undefined key forms its own group", `SELECT c.b, COUNT(1) AS n FROM c GROUP BY c.b`, nil, `[{"b":true,"n":1},{"b":false,"n":1},{"n":3}]`},
		{"GROUP BY expression", `SELECT LOWER(c.pk) AS k FROM c WHERE c.n = 1 GROUP BY LOWER(c.pk)`, nil, `[{"k":"p1"}]`},
		{"GROUP BY two keys", `SELECT c.pk, c.b FROM c GROUP BY c.pk, c.b`, nil, `[{"pk":"p1","b":true},{"pk":"p1","b":false},{"pk":"p2"},{"pk":"p3"}]`},
		{"GROUP BY over empty set yields nothing", `SELECT c.pk, COUNT(1) AS n FROM c WHERE false GROUP BY c.pk`, nil, `[]`},
		{"aggregate with TOP", `SELECT TOP 1 c.pk FROM c GROUP BY c.pk`, nil, `[{"pk":"p1"}]`},
	})
}

func TestExecuteEmptyAndNilInputs(t *testing.T) {
	q, err := Parse("SELECT * FROM c")
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Execute(nil, nil, Options{})
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("want empty non-nil slice, got %#v, %v", got, err)
	}
}

func TestExecuteCountParamErrors(t *testing.T) {
	docs := docsFrom(t, fixture)
	for _, tc := range []struct {
		query  string
		params Params
	}{
		{"SELECT TOP @n * FROM c", nil},
		{"SELECT TOP @n * FROM c", Params{"@n": "3"}},
		{"SELECT TOP @n * FROM c", Params{"@n": -1}},
		{"SELECT TOP @n * FROM c", Params{"@n": 1.5}},
		{"SELECT * FROM c OFFSET @o LIMIT 1", Params{"@o": nil}},
		{"SELECT * FROM c OFFSET 0 LIMIT @l", Params{"@l": true}},
	} {
		q, err := Parse(tc.query)
		if err != nil {
			t.Fatalf("%s: parse: %v", tc.query, err)
		}
		_, err = q.Execute(docs, tc.params, Options{})
		if err == nil {
			t.Fatalf("%s with %v: want error", tc.query, tc.params)
		}
		asQueryError(t, err)
	}
}

func TestResultsShareNoStateAcrossCalls(t *testing.T) {
	// A parsed query is reused concurrently by the server; run it in
	// parallel under -race to prove Execute does not mutate the Query.
	docs := docsFrom(t, fixture)
	q, err := Parse("SELECT c.pk, COUNT(1) AS n FROM c WHERE c.n != @x GROUP BY c.pk")
	if err != nil {
		t.Fatal(err)
	}
	q2, err := Parse("SELECT DISTINCT TOP 3 VALUE c.id FROM c WHERE IS_DEFINED(c.s) ORDER BY c.s DESC")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 16)
	for i := 0; i < 8; i++ {
		go func() {
			_, err := q.Execute(docs, Params{"@x": 1}, Options{})
			done <- err
		}()
		go func() {
			res, err := q2.Execute(docs, nil, Options{})
			if err == nil && len(res) != 3 {
				t.Errorf("want 3 results, got %v", res)
			}
			done <- err
		}()
	}
	for i := 0; i < 16; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestJoinsAndIteration(t *testing.T) {
	docs := docsFrom(t, fixture)
	runExecCases(t, docs, Options{}, []execCase{
		{"FROM x IN array", `SELECT VALUE t FROM t IN c.tags`, nil, `["red","green","blue"]`},
		{"SELECT * over an iterated array", `SELECT * FROM t IN c.tags`, nil, `["red","green","blue"]`},
		{"JOIN", `SELECT c.id, t AS tag FROM c JOIN t IN c.tags`, nil, `[{"id":"a","tag":"red"},{"id":"a","tag":"green"},{"id":"b","tag":"blue"}]`},
		{"JOIN filter on element", `SELECT VALUE c.id FROM c JOIN t IN c.tags WHERE t = 'green'`, nil, `["a"]`},
		{"two JOINs form a cross product per document", `SELECT VALUE [t, i.k] FROM c JOIN t IN c.tags JOIN i IN c.items`, nil, `[["blue","a"],["blue","b"]]`},
		{"JOIN over objects in arrays", `SELECT VALUE i.v FROM c JOIN i IN c.items WHERE i.k = @k`, Params{"@k": "b"}, `[2]`},
		{"JOIN on a non-array yields no rows", `SELECT VALUE c.id FROM c JOIN t IN c.s`, nil, `[]`},
		{"DISTINCT over JOIN", `SELECT DISTINCT VALUE c.id FROM c JOIN t IN c.tags`, nil, `["a","b"]`},
		{"COUNT over JOIN", `SELECT VALUE COUNT(1) FROM c JOIN t IN c.tags`, nil, `[3]`},
		{"ORDER BY document path in a JOIN", `SELECT VALUE t FROM c JOIN t IN c.tags ORDER BY c.n DESC`, nil, `["blue","red","green"]`},
		{"JOIN then GROUP BY element", `SELECT t AS tag, COUNT(1) AS n FROM c JOIN t IN c.tags GROUP BY t`, nil, `[{"tag":"red","n":1},{"tag":"green","n":1},{"tag":"blue","n":1}]`},
		{"FROM a path", `SELECT * FROM c.obj`, nil, `[{"x":1,"y":"z"},{"x":2}]`},
		{"FROM a path with alias", `SELECT VALUE o.x FROM c.obj o`, nil, `[1,2]`},
		{"FROM a path is known by its last name", `SELECT VALUE obj.x FROM c.obj`, nil, `[1,2]`},
		{"FROM a nested bracket path", `SELECT VALUE d FROM c.nested["deep"] d`, nil, `[{"v":10}]`},
		{"FROM x IN a nested path", `SELECT VALUE n FROM n IN root.arr`, nil, `[1,2,3]`},
	})
	t.Run("ORDER BY a JOIN alias is not a document path", func(t *testing.T) {
		q, err := Parse("SELECT VALUE t FROM c JOIN t IN c.tags ORDER BY t")
		if err != nil {
			t.Fatal(err)
		}
		e := asQueryError(t, q.Validate(Options{}))
		if !contains(e.Detail(), "could not be mapped to a document path") {
			t.Fatal(e)
		}
	})
	t.Run("cross-partition JOIN with a filter is served by the gateway", func(t *testing.T) {
		q, err := Parse("SELECT c.id FROM c JOIN t IN c.tags WHERE t = 'red'")
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Validate(Options{CrossPartition: true}); err != nil {
			t.Fatal(err)
		}
	})
}
