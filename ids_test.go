package cdb

import (
	"strings"
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/stretchr/testify/require"
)

var hostileStrings = []string{
	"order-1", "a/b/c", `back\slash`, "what?", "hash#tag", `quote"d`, "tilde~7E", "~", "~h", "%2F",
	"new\nline", "tab\t", "nul\x00byte", "del\x7f", "日本語", "emoji 🎉", "spaces  and.dots", "::", "a:instance",
	strings.Repeat("x", 300), strings.Repeat("/", 200), "", "trailing ", " ", "two  ", "~20", "a ~20",
}

func TestEscapeIDPartRoundTripsHostileStrings(t *testing.T) {
	for _, s := range hostileStrings {
		esc := escapeIDPart(s)
		for _, bad := range []string{"/", `\`, "?", "#", `"`} {
			require.NotContains(t, esc, bad, "%q", s)
		}
		for i := 0; i < len(esc); i++ {
			require.False(t, esc[i] < 0x20 || esc[i] == 0x7f, "control byte in %q", esc)
		}
		require.False(t, strings.HasSuffix(esc, " "), "%q escapes to %q, which ends in a space", s, esc)
		back, ok := unescapeIDPart(esc)
		require.True(t, ok, "%q", s)
		require.Equal(t, s, back)
	}
}

func TestEscapeIDPartLeavesOrdinaryIDsAlone(t *testing.T) {
	// Ids without special bytes must equal the Rust crate's raw ids.
	for _, s := range []string{"order-1", "parent::sub::2", "日本語", "a b.c", "x:y"} {
		require.Equal(t, s, escapeIDPart(s))
	}
	require.Equal(t, "order-1:instance", instanceDocID("order-1"))
	require.Equal(t, "order-1:history:2:15", historyDocID("order-1", 2, 15))
	require.Equal(t, "i:kv:a~2Fb", kvDocID("i", "a/b"))
}

// TestDocIDsNeverEndInASpace: the gateway accepts an id ending in a space
// and then answers 401 to every point operation on it, so a KV key, session
// id or instance id ending in one must not end a document id.
func TestDocIDsNeverEndInASpace(t *testing.T) {
	for _, id := range []string{kvDocID("i", "k "), kvDeltaDocID("i", "k "), instanceDocID("i "), sessionDocID("i", "s ")} {
		require.False(t, strings.HasSuffix(id, " "), "%q", id)
	}
}

func TestUnescapeRejectsMalformed(t *testing.T) {
	for _, s := range []string{"~", "~4", "~ZZ", "~41", "~20x"} { // ~41 = 'A', never escaped; a space only at the end
		_, ok := unescapeIDPart(s)
		require.False(t, ok, s)
	}
}

func TestDocIDsFitTheServiceLimit(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	ids := []string{
		instanceDocID(long), historyDocID(long, 1<<63, 1<<63), kvDocID(long, long), sessionDocID("i", long),
		kvDocID(strings.Repeat("/", 100), "k"),
	}
	for _, id := range ids {
		require.LessOrEqual(t, len(id), maxIDBytes, id)
		require.NotContains(t, id, "/")
	}
	// Distinct long values stay distinct; equal values map to equal ids.
	require.NotEqual(t, kvDocID("i", long+"a"), kvDocID("i", long+"b"))
	require.Equal(t, kvDocID("i", long), kvDocID("i", long))
	// A hashed part cannot collide with an escaped one.
	require.NotEqual(t, kvDocID("i", hashIDPart(long)), kvDocID("i", long))
}

func TestValidateInstanceID(t *testing.T) {
	require.NoError(t, validateInstanceID("op", `a/b?c#d"e\f`))
	for _, bad := range []string{"", "\xff\xfe", strings.Repeat("a", maxPartitionKeyBytes+1), "party-🎉", "nul\x00", "bell\a", "del\x7f"} {
		err := validateInstanceID("op", bad)
		require.Error(t, err)
		require.False(t, duroxide.IsRetryable(err))
	}
}
