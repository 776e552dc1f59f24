// Package wirejson is a strict, allocation-light JSON reader that accepts
// exactly what Rust's serde_json accepts and reports problems with
// serde_json's wording, so that package duroxide can decode the Rust wire
// format byte-compatibly. It knows nothing about duroxide's types: the
// caller drives a Decoder value by value (read a string, a u64, a key,
// skip a value, open a serde enum) and maps keys to fields itself.
//
// Start with [Decoder].
//
// Errors are *Error values holding an offset and a message; the caller
// turns them into its own error type, adding the type and field path.
package wirejson

import (
	"fmt"
	"strconv"
)

// Error reports malformed or unexpected input at a byte offset. Msg uses
// serde_json's wording (e.g. "invalid type: string, expected u64").
type Error struct {
	// Offset is the byte offset in the input at or near the problem.
	Offset int
	// Msg describes the problem.
	Msg string
}

// Error describes the problem and where it is.
func (e *Error) Error() string {
	return "wirejson: at offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// Options configure a Decoder.
type Options struct {
	// MaxDepth limits the nesting of objects and arrays; 0 is unlimited.
	MaxDepth int
	// Buffered mimics serde reading a value from its buffered Content (as
	// for #[serde(flatten)]) rather than directly from the input. It
	// differs in three corner cases: skipped strings must not hold lone
	// surrogates, skipped numbers must fit in a float64, and a unit
	// variant written as a map may have {} as its value.
	Buffered bool
}

// Decoder reads one JSON input. The zero value is not usable; create one
// with NewDecoder. A Decoder is a small value meant to live on the stack
// (embedded in the caller's decoder); it is not safe for concurrent use.
type Decoder struct {
	data     []byte
	pos      int
	depth    int // current nesting of objects and arrays
	maxDepth int // 0 = unlimited
	buffered bool
}

// NewDecoder returns a Decoder positioned at the start of data.
func NewDecoder(data []byte, opts Options) Decoder {
	return Decoder{data: data, maxDepth: opts.MaxDepth, buffered: opts.Buffered}
}

// Errorf returns an *Error at offset pos.
func (d *Decoder) Errorf(pos int, format string, args ...any) error {
	return &Error{Offset: pos, Msg: fmt.Sprintf(format, args...)}
}

// Failf returns an *Error at the current position.
func (d *Decoder) Failf(format string, args ...any) error {
	return d.Errorf(d.pos, format, args...)
}

// Pos returns the current offset.
func (d *Decoder) Pos() int { return d.pos }

// SetPos moves to offset pos, which must be the start of a value (or of
// whitespace before one) that the decoder has already validated; callers
// use it to come back to values recorded during a first pass.
func (d *Decoder) SetPos(pos int) { d.pos = pos }

// Advance consumes the byte that Peek returned.
func (d *Decoder) Advance() { d.pos++ }

// ws skips JSON whitespace.
func (d *Decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// Peek skips whitespace and returns the next byte, or 0 at the end.
func (d *Decoder) Peek() byte {
	d.ws()
	if d.pos >= len(d.data) {
		return 0
	}
	return d.data[d.pos]
}

// PeekPos skips whitespace and returns the offset of the next byte.
func (d *Decoder) PeekPos() int {
	d.ws()
	return d.pos
}

// Finish checks that only whitespace follows the decoded value.
func (d *Decoder) Finish() error {
	if d.Peek() != 0 {
		return d.Failf("trailing characters after the JSON value")
	}
	return nil
}

// Enter records that an object or array is being opened, failing once
// nesting exceeds the maximum depth. Leave undoes it.
func (d *Decoder) Enter() error {
	d.depth++
	if d.maxDepth > 0 && d.depth > d.maxDepth {
		return d.Failf("recursion limit exceeded")
	}
	return nil
}

// Leave records that an object or array opened with Enter was closed.
func (d *Decoder) Leave() { d.depth-- }

// describe names the JSON type starting with c, for error messages.
func describe(c byte) string {
	switch {
	case c == '"':
		return "string"
	case c == '{':
		return "map"
	case c == '[':
		return "sequence"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case c == '-' || isDigit(c):
		return "number"
	case c == 0:
		return "end of input"
	}
	return fmt.Sprintf("character %q", c)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// InvalidType reports that the next value is not of the expected type
// (expected is serde's wording, e.g. "a string" or "struct Event"). It
// validates the value first so that malformed JSON is reported as such.
func (d *Decoder) InvalidType(expected string) error {
	pos := d.pos
	c := d.Peek()
	if err := d.SkipValue(); err != nil {
		return err
	}
	return d.Errorf(pos, "invalid type: %s, expected %s", describe(c), expected)
}

// literal consumes the literal lit (true, false, null).
func (d *Decoder) literal(lit string) error {
	if len(d.data)-d.pos < len(lit) || string(d.data[d.pos:d.pos+len(lit)]) != lit {
		return d.Failf("expected value")
	}
	d.pos += len(lit)
	return nil
}

// Null consumes a null if one is next and reports whether it did.
func (d *Decoder) Null() (bool, error) {
	if d.Peek() != 'n' {
		return false, nil
	}
	return true, d.literal("null")
}

// ReadBool decodes true or false.
func (d *Decoder) ReadBool() (bool, error) {
	switch d.Peek() {
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	}
	return false, d.InvalidType("a boolean")
}
