package durable

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCodecEncode(t *testing.T) {
	type pair struct {
		Zeta  int    `json:"zeta"`
		Alpha string `json:"alpha"`
	}
	cases := []struct {
		in   any
		want string
	}{
		{"World", "World"},     // strings are stored raw
		{42, "42"},             // scalars as JSON
		{true, "true"},         //
		{[]int{1, 2}, "[1,2]"}, //
		{pair{1, "<a&b>"}, `{"alpha":"<a&b>","zeta":1}`}, // keys sorted, no HTML escaping (serde_json)
		{map[string]any{"b": 1.5, "a": nil}, `{"a":null,"b":1.5}`},
	}
	for _, c := range cases {
		got, err := Encode(c.in)
		require.NoError(t, err)
		require.Equal(t, c.want, got)
	}
	_, err := Encode(make(chan int))
	require.Error(t, err)
}

func TestCodecDecode(t *testing.T) {
	s, err := Decode[string]("World")
	require.NoError(t, err)
	require.Equal(t, "World", s) // raw text falls back to a JSON string
	s, err = Decode[string](`"quoted"`)
	require.NoError(t, err)
	require.Equal(t, "quoted", s)
	n, err := Decode[int]("7")
	require.NoError(t, err)
	require.Equal(t, 7, n)
	type out struct {
		Sum int `json:"sum"`
	}
	o, err := Decode[out](`{"sum":5}`)
	require.NoError(t, err)
	require.Equal(t, out{5}, o)
	_, err = Decode[int]("not a number")
	require.Error(t, err)
}

func TestTypedActivityRoundTrip(t *testing.T) {
	type in struct{ A, B int }
	type res struct {
		Sum int `json:"sum"`
	}
	var got res
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		r, err := CallActivity[res](ctx, "Add", in{2, 3}).Await()
		got = r
		return "", err
	}
	e := newTestEngineOf(evStarted(1))
	executeTurn(e, h)
	require.Equal(t, []action{actionCallActivity{SchedulingEventID: 2, Name: "Add", Input: `{"A":2,"B":3}`}}, e.pendingActions())
	_, r := executeStep(t, e.finalHistory(), h, msgActivityCompleted(2, `{"sum":5}`))
	require.Equal(t, turnCompleted, r.Kind)
	require.Equal(t, res{5}, got)

	// A result that does not decode fails the future with the decoder's text.
	_, r = executeStep(t, e.finalHistory(), h, msgActivityCompleted(2, `{"sum":"five"}`))
	require.Equal(t, turnFailed, r.Kind)
	require.Contains(t, displayMessage(r.Details), "cannot unmarshal")
}
