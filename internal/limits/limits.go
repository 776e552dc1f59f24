// Package limits is the one definition of what the Cosmos DB store
// refuses: instance ids it cannot use as a partition key, strings JSON
// cannot carry, documents over 2 MiB. The Cosmos provider (package cdb)
// checks its real documents against it, and memprovider checks the same
// rules by default, so that code whose unit tests pass in memory does not
// fail in production on input Cosmos refuses.
//
// Start with [InstanceID], [UserString] and [DocSize].
//
// Every refusal is a permanent duroxide.ProviderError of kind
// duroxide.ErrInvalidInput: retrying the same input cannot succeed. A
// document over the size limit is a *duroxide.TooLargeError, which matches
// duroxide.ErrTooLarge as well (the runtime turns an activity result it
// cannot store into that activity's failure).
package limits

import (
	"strings"
	"unicode/utf8"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/wirejson"
)

const (
	// MaxDocBytes is the largest document Cosmos DB stores (2 MiB).
	MaxDocBytes = 2 * 1024 * 1024
	// MaxPartitionKeyBytes is Cosmos's limit for a (large, v2) partition
	// key value; an instance id is the partition key, so a longer one
	// cannot be stored at all. Bytes, not characters, so a multi-byte id
	// can never be refused by the service after it was accepted here.
	MaxPartitionKeyBytes = 2048
	// ReservedInstanceID is the partition of the Cosmos provider's dispatch
	// leases (cdb.LeasePartition); no instance may use it.
	ReservedInstanceID = "_cdb_dispatch_leases"
	// FixedFieldBytes bounds what a Cosmos provider document holds besides
	// the string fields DocBytes is given: type, numbers, lock token, trace
	// context, system fields, and up to four document ids derived from
	// instance ids (255 bytes each, but up to 7 bytes per byte once
	// JSON-escaped inside an outbox payload). DocBytes adds it, so an
	// estimate is never below the real document.
	FixedFieldBytes = 8 * 1024
	// ExecutionEntryBytes bounds one entry of an instance document's
	// execution list (id, status, start, completion, event count).
	ExecutionEntryBytes = 160
)

// InstanceID refuses instance ids that cannot be stored: empty, reserved,
// invalid UTF-8 (JSON cannot carry it), longer than a partition key value
// may be, or with characters azcosmos cannot send in the partition key
// header. Everything else — slashes, quotes, '#', BMP unicode — is fine.
func InstanceID(op, id string) error {
	switch {
	case id == "":
		return invalid(op, "instance id must not be empty")
	case id == ReservedInstanceID:
		return invalid(op, "instance id %q is reserved for dispatch leases", id)
	case !utf8.ValidString(id):
		return invalid(op, "instance id is not valid UTF-8")
	case len(id) > MaxPartitionKeyBytes:
		return invalid(op, "instance id is %d bytes; Cosmos partition key values are limited to %d bytes", len(id), MaxPartitionKeyBytes)
	case HasControl(id):
		// Same cause: QuoteToASCII writes \x00-style escapes, not JSON.
		return invalid(op, "instance id contains a control character (other than \\b \\t \\n \\f \\r), which azcosmos v1.5.0 cannot send as a partition key")
	case !bmpOnly(id):
		// azcosmos v1.5.0 writes the partition key header with
		// strconv.QuoteToASCII, which renders such characters as \U0001xxxx:
		// not JSON, so the service refuses the request.
		return invalid(op, "instance id contains a character outside the Basic Multilingual Plane (e.g. an emoji), which azcosmos v1.5.0 cannot send as a partition key")
	}
	return nil
}

// UserString refuses a string stored in a document but never used as a
// partition key (a KV key, a session id) when it is not valid UTF-8: JSON
// would silently turn it into U+FFFD, so it would not round-trip.
func UserString(op, what, s string) error {
	if !utf8.ValidString(s) {
		return invalid(op, "%s is not valid UTF-8", what)
	}
	return nil
}

// DocSize refuses a document of n bytes when Cosmos DB would: what names
// the document ("the work item", "history event 5", ...).
func DocSize(op, what string, n int) error {
	if n > MaxDocBytes {
		return duroxide.TooLarge(op, what, n, MaxDocBytes)
	}
	return nil
}

// DocBytes estimates, from above, the size of a Cosmos provider document
// whose string fields are fields: each is stored JSON-encoded (escaped and
// quoted, as encoding/json writes it), plus FixedFieldBytes for the rest.
// Work items and events are themselves JSON stored in a string field, so
// their JSON is one field; a message to another instance travels inside an
// outbox document, whose payload field holds the whole queue document, so
// pass Nested(...) of the queue document's fields.
func DocBytes(fields ...string) int {
	n := FixedFieldBytes
	for _, f := range fields {
		n += EncodedLen(f)
	}
	return n
}

// Nested stands in for a document stored as a string field of another
// document (an outbox intent's payload): its string fields encoded and
// concatenated, padded with FixedFieldBytes for its fixed fields. Passed
// to DocBytes, it is encoded once more, as the payload is.
func Nested(fields ...string) string {
	b := []byte(strings.Repeat("x", FixedFieldBytes))
	for _, f := range fields {
		b = append(b, encode(f)...)
	}
	return string(b)
}

// EncodedLen is the length of s as a JSON string, quotes included, as the
// stores encode it (no HTML escapes): what encoding/json writes, counted
// without writing it (TestEncodedLenMatchesTheEncoder).
func EncodedLen(s string) int { return encodedLen(s, false) }

// HTMLEscapedLen is EncodedLen of the JSON encoding/json.Marshal makes of
// a json.Marshaler whose output is js (compact JSON): Marshal replaces
// '<', '>', '&', U+2028 and U+2029 in js by six-byte \u escapes before
// the result is stored as a string. memprovider sizes history events this
// way, without encoding each event twice.
func HTMLEscapedLen(js []byte) int { return encodedLen(js, true) }

// encodedLen counts the bytes encoding/json's string encoder writes for
// s (after the HTML escapes of a Marshaler's output, when html is set).
func encodedLen[T string | []byte](s T, html bool) int {
	n := 2 // the quotes
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case html && (c == '<' || c == '>' || c == '&'):
				n += 7 // \u003c, its backslash escaped
			case c == '\\' || c == '"' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20:
				n += 6 // \u00XX
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6 // \u2028
			if html {
				n++ // Marshal wrote the escape, so its backslash is escaped
			}
		default:
			n += size
		}
		i += size
	}
	return n
}

func encode(s string) []byte {
	// The stores write JSON without HTML escapes (internal/wirejson).
	b, err := wirejson.Marshal(s)
	if err != nil { // a string always encodes
		panic("limits: encode string: " + err.Error())
	}
	return b
}

// HasControl reports control characters that strconv.QuoteToASCII
// renders as something JSON does not accept (\x00, \a, \v, \x7f, ...);
// \b, \t, \n, \f and \r come out as valid JSON escapes.
func HasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\b' || c == '\t' || c == '\n' || c == '\f' || c == '\r':
		case c < 0x20 || c == 0x7f:
			return true
		}
	}
	return false
}

func bmpOnly(s string) bool {
	for _, r := range s {
		if r > 0xFFFF {
			return false
		}
	}
	return true
}

func invalid(op, format string, args ...any) error {
	return duroxide.Kinded(duroxide.ErrInvalidInput, op, format, args...)
}

// HeartbeatDetails refuses heartbeat details over
// duroxide.MaxHeartbeatDetailsBytes, or that would make their work item's
// document, whose work item JSON is workItem, larger than Cosmos DB
// stores.
func HeartbeatDetails(op, workItem, details string) error {
	if n := EncodedLen(details); n > duroxide.MaxHeartbeatDetailsBytes {
		return duroxide.TooLarge(op, "heartbeat details", n, duroxide.MaxHeartbeatDetailsBytes)
	}
	return DocSize(op, "the work item with its heartbeat details", DocBytes(workItem, details))
}
