package wirejson

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMarshalKeepsHTML: '<', '>' and '&' are written as themselves, as
// serde_json writes them, with no trailing newline.
func TestMarshalKeepsHTML(t *testing.T) {
	got, err := Marshal(map[string]string{"html": "<p>a & b</p>"})
	require.NoError(t, err)
	require.Equal(t, `{"html":"<p>a & b</p>"}`, string(got))
}
