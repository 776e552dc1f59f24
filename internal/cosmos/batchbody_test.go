package cosmos

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnescapeHTML: the HTML escapes encoding/json adds become the
// characters again, every other escape (an escaped backslash before "u003c"
// included) stays, and the JSON value is unchanged.
func TestUnescapeHTML(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a":"x"}`, `{"a":"x"}`},
		{`{"a":"\u003cp\u003ea \u0026 b\u003c/p\u003e"}`, `{"a":"<p>a & b</p>"}`},
		{`{"a":"\\u003c"}`, `{"a":"\\u003c"}`},
		{`{"a":"\\\u003c"}`, `{"a":"\\<"}`},
		{`{"a":"\u003C\u2028\u2029\u0041\n\""}`, "{\"a\":\"<\u2028\u2029\\u0041\\n\\\"\"}"},
	}
	for _, c := range cases {
		got, _ := unescapeHTML([]byte(c.in))
		require.Equal(t, c.want, string(got), c.in)
		var a, b any
		require.NoError(t, json.Unmarshal([]byte(c.in), &a))
		require.NoError(t, json.Unmarshal(got, &b))
		require.Equal(t, a, b, "the JSON value must not change: %s", c.in)
	}
	raw := []byte(`{"a":"\u003c"}`)
	got, changed := unescapeHTML(raw)
	require.True(t, changed)
	require.Equal(t, `{"a":"\u003c"}`, string(raw), "the input is not modified in place")
	require.Equal(t, `{"a":"<"}`, string(got))
}
