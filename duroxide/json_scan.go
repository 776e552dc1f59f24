package duroxide

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// flatMaxDepth is the deepest nesting serde_json accepts in an Event: its
// recursion limit of 128 applies to the values serde buffers for
// #[serde(flatten)], counting the event object itself.
const flatMaxDepth = 127

// decoder is a strict, allocation-light JSON reader over one input.
type decoder struct {
	data     []byte
	pos      int
	what     string // the wire type being decoded, for errors
	depth    int    // current nesting of objects and arrays
	maxDepth int    // 0 = unlimited
	// flat reports that an Event is being decoded. serde deserializes the
	// flattened part of an Event from a buffered copy, which differs from
	// direct decoding in three corner cases: nesting is limited, ignored
	// strings must not hold lone surrogates, and a unit variant written
	// as a map may have {} as its value.
	flat bool
}

func (d *decoder) errAt(pos int, format string, args ...any) error {
	return &DecodeError{Type: d.what, Offset: pos, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) fail(format string, args ...any) error {
	return d.errAt(d.pos, format, args...)
}

// ws skips JSON whitespace.
func (d *decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (d *decoder) peek() byte {
	d.ws()
	if d.pos >= len(d.data) {
		return 0
	}
	return d.data[d.pos]
}

// finish checks that only whitespace follows the decoded value.
func (d *decoder) finish() error {
	if d.peek() != 0 {
		return d.fail("trailing characters after the JSON value")
	}
	return nil
}

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

// invalidType reports that the value at d.pos is not of the expected type.
// It validates the value first so that malformed JSON is reported as such.
func (d *decoder) invalidType(expected string) error {
	pos := d.pos
	c := d.peek()
	if err := d.skipValue(); err != nil {
		return err
	}
	return d.errAt(pos, "invalid type: %s, expected %s", describe(c), expected)
}

// literal consumes the literal lit (true, false, null).
func (d *decoder) literal(lit string) error {
	if len(d.data)-d.pos < len(lit) || string(d.data[d.pos:d.pos+len(lit)]) != lit {
		return d.fail("expected value")
	}
	d.pos += len(lit)
	return nil
}

// null consumes a null if one is next and reports whether it did.
func (d *decoder) null() (bool, error) {
	if d.peek() != 'n' {
		return false, nil
	}
	return true, d.literal("null")
}

// scanString consumes the string token at d.pos (which is '"') and returns
// its raw contents and whether they contain escapes. It validates escapes,
// rejects raw control characters and checks UTF-8.
func (d *decoder) scanString() (raw []byte, escaped bool, err error) {
	start := d.pos + 1
	ascii := true
	i := start
	data := d.data
	for {
		for i < len(data) && plainASCII[data[i]] {
			i++
		}
		if i >= len(data) {
			d.pos = i
			return nil, false, d.fail("EOF while parsing a string")
		}
		c := data[i]
		switch {
		case c == '"':
			raw = data[start:i]
			if !ascii && !utf8.Valid(raw) {
				return nil, false, d.errAt(start, "invalid UTF-8 in string")
			}
			d.pos = i + 1
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(data) {
				d.pos = i + 1
				return nil, false, d.fail("EOF while parsing a string")
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) {
					d.pos = len(data)
					return nil, false, d.fail("EOF while parsing a string")
				}
				for j := i + 2; j < i+6; j++ {
					if hexVal(data[j]) < 0 {
						return nil, false, d.errAt(j, "invalid escape")
					}
				}
				i += 6
			default:
				return nil, false, d.errAt(i, "invalid escape")
			}
		case c < 0x20:
			return nil, false, d.errAt(i, "control character (\\u0000-\\u001F) found while parsing a string")
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			i++
		}
	}
}

// plainASCII marks the bytes a string may contain that need no further
// attention: printable ASCII other than '"' and '\\'.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func hex4(b []byte) rune {
	return rune(hexVal(b[0])<<12 | hexVal(b[1])<<8 | hexVal(b[2])<<4 | hexVal(b[3]))
}

// unescape decodes the contents of a string already validated by
// scanString. base is the offset of raw in the input, for errors.
func (d *decoder) unescape(raw []byte, base int) (string, error) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		e := raw[i+1]
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(raw[i+2 : i+6])
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00:
				// A leading surrogate must be followed by a trailing one.
				if i+12 > len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' {
					return "", d.errAt(base+i, "lone leading surrogate in hex escape")
				}
				r2 := hex4(raw[i+8 : i+12])
				if r2 < 0xDC00 || r2 > 0xDFFF {
					return "", d.errAt(base+i, "lone leading surrogate in hex escape")
				}
				out = utf8.AppendRune(out, utf16.DecodeRune(r, r2))
				i += 12
				continue
			case utf16.IsSurrogate(r):
				return "", d.errAt(base+i, "lone trailing surrogate in hex escape")
			}
			out = utf8.AppendRune(out, r)
			i += 6
			continue
		}
		i += 2
	}
	return string(out), nil
}

// readString decodes a JSON string.
func (d *decoder) readString() (string, error) {
	if d.peek() != '"' {
		return "", d.invalidType("a string")
	}
	start := d.pos + 1
	raw, esc, err := d.scanString()
	if err != nil {
		return "", err
	}
	if !esc {
		return string(raw), nil
	}
	return d.unescape(raw, start)
}

// scanNumber consumes a number token per the JSON grammar and reports
// whether it is a plain non-negative integer.
func (d *decoder) scanNumber() (tok []byte, isUint bool, err error) {
	data := d.data
	start := d.pos
	i := start
	isUint = true
	if i < len(data) && data[i] == '-' {
		isUint = false
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	default:
		return nil, false, d.errAt(i, "invalid number")
	}
	if i < len(data) && data[i] == '.' {
		isUint = false
		i++
		if i >= len(data) || !isDigit(data[i]) {
			return nil, false, d.errAt(i, "invalid number")
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		isUint = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return nil, false, d.errAt(i, "invalid number")
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && isDigit(data[i]) { // e.g. "01"
		return nil, false, d.errAt(i, "invalid number")
	}
	d.pos = i
	return data[start:i], isUint, nil
}

// readU64 decodes a u64 without passing through float64.
func (d *decoder) readU64() (uint64, error) {
	c := d.peek()
	if c != '-' && !isDigit(c) {
		return 0, d.invalidType("u64")
	}
	start := d.pos
	tok, isUint, err := d.scanNumber()
	if err != nil {
		return 0, err
	}
	if !isUint {
		what := "floating point"
		if tok[0] == '-' && len(tok) > 1 && !containsAny(tok, ".eE") {
			what = "negative integer"
		}
		return 0, d.errAt(start, "invalid type: %s `%s`, expected u64", what, tok)
	}
	var n uint64
	for _, c := range tok {
		dig := uint64(c - '0')
		if n > (math.MaxUint64-dig)/10 {
			return 0, d.errAt(start, "number `%s` out of range for u64", tok)
		}
		n = n*10 + dig
	}
	return n, nil
}

func containsAny(b []byte, chars string) bool {
	for _, c := range b {
		for i := 0; i < len(chars); i++ {
			if c == chars[i] {
				return true
			}
		}
	}
	return false
}

// readU32 decodes a u32, rejecting values out of range.
func (d *decoder) readU32() (uint32, error) {
	start := d.peekPos()
	n, err := d.readU64()
	if err != nil {
		return 0, err
	}
	if n > math.MaxUint32 {
		return 0, d.errAt(start, "invalid value: integer `%d`, expected u32", n)
	}
	return uint32(n), nil
}

func (d *decoder) peekPos() int {
	d.ws()
	return d.pos
}

// readBool decodes true or false.
func (d *decoder) readBool() (bool, error) {
	switch d.peek() {
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	}
	return false, d.invalidType("a boolean")
}

func (d *decoder) enter() error {
	d.depth++
	if d.maxDepth > 0 && d.depth > d.maxDepth {
		return d.fail("recursion limit exceeded")
	}
	return nil
}

// skipValue consumes and validates any JSON value. It is iterative, so
// deeply nested input cannot exhaust the stack; nesting is bounded only by
// d.maxDepth.
func (d *decoder) skipValue() error {
	var stackBuf [16]byte
	stack := stackBuf[:0] // the closing bracket of each open container
	for {
		// Consume one value, or open a container and continue with its
		// first value.
		switch c := d.peek(); c {
		case '{', '[':
			if err := d.enter(); err != nil {
				return err
			}
			d.pos++
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			if d.peek() == closer {
				d.pos++
				d.depth--
				break
			}
			stack = append(stack, closer)
			if c == '{' {
				if err := d.skipKey(); err != nil {
					return err
				}
			}
			continue
		default:
			if err := d.skipScalar(c); err != nil {
				return err
			}
		}
		// A value is complete: close finished containers, or move on to the
		// next element.
		for {
			if len(stack) == 0 {
				return nil
			}
			closer := stack[len(stack)-1]
			c := d.peek()
			if c == ',' {
				d.pos++
				if closer == '}' {
					if err := d.skipKey(); err != nil {
						return err
					}
				}
				break
			}
			if c != closer {
				return d.fail("expected ',' or '%c'", closer)
			}
			d.pos++
			d.depth--
			stack = stack[:len(stack)-1]
		}
	}
}

// skipKey consumes an object key and the following ':'.
func (d *decoder) skipKey() error {
	if d.peek() != '"' {
		return d.fail("key must be a string")
	}
	if err := d.skipString(); err != nil {
		return err
	}
	if d.peek() != ':' {
		return d.fail("expected ':'")
	}
	d.pos++
	return nil
}

// skipString consumes a string. In flat mode (an Event, where serde
// buffers every value) escapes are fully decoded, so lone surrogates are
// rejected as serde does; elsewhere serde only checks the escape syntax of
// ignored strings.
func (d *decoder) skipString() error {
	start := d.pos + 1
	raw, esc, err := d.scanString()
	if err == nil && esc && d.flat {
		_, err = d.unescape(raw, start)
	}
	return err
}

// skipScalar consumes a string, number or literal starting with c.
func (d *decoder) skipScalar(c byte) error {
	switch c {
	case '"':
		return d.skipString()
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	case 0:
		return d.fail("EOF while parsing a value")
	}
	if c == '-' || isDigit(c) {
		start := d.pos
		tok, _, err := d.scanNumber()
		if err == nil && d.flat {
			// serde buffers the number as u64, i64 or f64; one beyond the
			// range of f64 is an error.
			if f, _ := strconv.ParseFloat(string(tok), 64); math.IsInf(f, 0) {
				return d.errAt(start, "number out of range")
			}
		}
		return err
	}
	return d.fail("expected value")
}

// readKey reads an object key and the following ':'. It returns the raw
// key bytes when they contain no escapes, else the unescaped key in s.
func (d *decoder) readKey() (raw []byte, s string, esc bool, err error) {
	if d.peek() != '"' {
		return nil, "", false, d.fail("key must be a string")
	}
	start := d.pos + 1
	raw, esc, err = d.scanString()
	if err != nil {
		return nil, "", false, err
	}
	if esc {
		if s, err = d.unescape(raw, start); err != nil {
			return nil, "", false, err
		}
	}
	if d.peek() != ':' {
		return nil, "", false, d.fail("expected ':'")
	}
	d.pos++
	return raw, s, esc, nil
}

// field indexes every key name that appears in a duroxide wire struct.
type field uint8

const (
	fEventID field = iota
	fSourceEventID
	fInstanceID
	fExecutionID
	fTimestampMs
	fDuroxideVersion
	fType
	fName
	fVersion
	fInput
	fParentInstance
	fParentID
	fParentExecutionID
	fCarryForwardEvents
	fInitialCustomStatus
	fOutput
	fDetails
	fSessionID
	fTag
	fResult
	fReason
	fFireAtMs
	fData
	fInstance
	fStatus
	fKey
	fValue
	fLastUpdatedAtMs
	fOrchestration
	fID
	fOperation
	fMessage
	fRetryable
	fKind
	fResource
	fAttemptCount
	fMaxAttempts
	fMessageType
	fActivityName
	fActivityID
	fError
	numFields
)

var fieldNames = [numFields]string{
	fEventID:             "event_id",
	fSourceEventID:       "source_event_id",
	fInstanceID:          "instance_id",
	fExecutionID:         "execution_id",
	fTimestampMs:         "timestamp_ms",
	fDuroxideVersion:     "duroxide_version",
	fType:                "type",
	fName:                "name",
	fVersion:             "version",
	fInput:               "input",
	fParentInstance:      "parent_instance",
	fParentID:            "parent_id",
	fParentExecutionID:   "parent_execution_id",
	fCarryForwardEvents:  "carry_forward_events",
	fInitialCustomStatus: "initial_custom_status",
	fOutput:              "output",
	fDetails:             "details",
	fSessionID:           "session_id",
	fTag:                 "tag",
	fResult:              "result",
	fReason:              "reason",
	fFireAtMs:            "fire_at_ms",
	fData:                "data",
	fInstance:            "instance",
	fStatus:              "status",
	fKey:                 "key",
	fValue:               "value",
	fLastUpdatedAtMs:     "last_updated_at_ms",
	fOrchestration:       "orchestration",
	fID:                  "id",
	fOperation:           "operation",
	fMessage:             "message",
	fRetryable:           "retryable",
	fKind:                "kind",
	fResource:            "resource",
	fAttemptCount:        "attempt_count",
	fMaxAttempts:         "max_attempts",
	fMessageType:         "message_type",
	fActivityName:        "activity_name",
	fActivityID:          "activity_id",
	fError:               "error",
}

var fieldIndex = func() map[string]field {
	m := make(map[string]field, numFields)
	for i, n := range fieldNames {
		m[n] = field(i)
	}
	return m
}()

// Every field must fit in the presence bit masks.
var _ [64 - numFields]struct{}

// fields records where the value of each known key lies in one object, so
// that a struct can be decoded regardless of key order (serde semantics).
// Getters record the first error in err and return zero values after it.
type fields struct {
	d       *decoder
	objPos  int
	present uint64
	dup     uint64
	start   [numFields]int
	err     error
}

// collect scans the object at d.pos, validating every value and recording
// the positions of known keys. expected describes the value for a type
// error (e.g. "struct Event").
func (d *decoder) collect(f *fields, expected string) error {
	f.d = d
	if d.peek() != '{' {
		return d.invalidType(expected)
	}
	f.objPos = d.pos
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++
	if d.peek() == '}' {
		d.pos++
		d.depth--
		return nil
	}
	for {
		raw, s, esc, err := d.readKey()
		if err != nil {
			return err
		}
		var idx field
		var ok bool
		if esc {
			idx, ok = fieldIndex[s]
		} else {
			idx, ok = fieldIndex[string(raw)]
		}
		if ok {
			bit := uint64(1) << idx
			if f.present&bit != 0 {
				f.dup |= bit
			} else {
				f.present |= bit
				f.start[idx] = d.peekPos()
			}
		}
		if err := d.skipValue(); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			d.depth--
			return nil
		default:
			return d.fail("expected ',' or '}'")
		}
	}
}

// layout describes a Rust struct (variant) for its sequence form: field
// order and which fields have #[serde(default)].
type layout struct {
	name     string // e.g. "struct variant WorkItem::CancelInstance"
	order    []field
	defaults uint64 // bit i set: field i may be absent
}

func bits(fs ...field) uint64 {
	var m uint64
	for _, f := range fs {
		m |= 1 << f
	}
	return m
}

// collectStruct scans a struct (variant) value in either of the forms
// serde accepts: a map, or a sequence of the fields in declaration order
// where trailing #[serde(default)] fields may be left out.
func (d *decoder) collectStruct(f *fields, l *layout) error {
	if d.peek() != '[' {
		return d.collect(f, l.name)
	}
	f.d = d
	f.objPos = d.pos
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++
	n := 0
	if d.peek() == ']' {
		d.pos++
		d.depth--
	} else {
		for {
			if n == len(l.order) {
				return d.fail("trailing elements, expected %s with %d elements", l.name, len(l.order))
			}
			idx := l.order[n]
			f.present |= 1 << idx
			f.start[idx] = d.peekPos()
			if err := d.skipValue(); err != nil {
				return err
			}
			n++
			c := d.peek()
			if c == ']' {
				d.pos++
				d.depth--
				break
			}
			if c != ',' {
				return d.fail("expected ',' or ']'")
			}
			d.pos++
		}
	}
	for _, idx := range l.order[n:] {
		if l.defaults&(1<<idx) == 0 {
			return d.errAt(f.objPos, "invalid length %d, expected %s with %d elements", n, l.name, len(l.order))
		}
	}
	return nil
}

// seek positions the decoder at the value of idx. It returns false when
// the key is absent (recording "missing field" if required) or after an
// error.
func (f *fields) seek(idx field, required bool) bool {
	if f.err != nil {
		return false
	}
	bit := uint64(1) << idx
	if f.dup&bit != 0 {
		f.err = &DecodeError{Type: f.d.what, Field: fieldNames[idx], Offset: f.objPos, Msg: "duplicate field"}
		return false
	}
	if f.present&bit == 0 {
		if required {
			f.err = &DecodeError{Type: f.d.what, Field: fieldNames[idx], Offset: f.objPos, Msg: "missing field"}
		}
		return false
	}
	f.d.pos = f.start[idx]
	return true
}

func (f *fields) fail(idx field, err error) {
	if err != nil && f.err == nil {
		f.err = prefixField(err, fieldNames[idx])
	}
}

// isNull reports whether the (present) value at the decoder is null.
func (f *fields) isNull() bool {
	if f.d.peek() == 'n' {
		f.d.pos += 4 // validated by collect
		return true
	}
	return false
}

func (f *fields) str(idx field) string {
	if !f.seek(idx, true) {
		return ""
	}
	s, err := f.d.readString()
	f.fail(idx, err)
	return s
}

// optStr decodes an Option<String>: missing or null is nil.
func (f *fields) optStr(idx field) *string {
	if !f.seek(idx, false) || f.isNull() {
		return nil
	}
	s, err := f.d.readString()
	if err != nil {
		f.fail(idx, err)
		return nil
	}
	return &s
}

func (f *fields) u64(idx field) uint64 {
	if !f.seek(idx, true) {
		return 0
	}
	n, err := f.d.readU64()
	f.fail(idx, err)
	return n
}

// u64Default decodes a #[serde(default)] u64: missing is 0, null is an
// error.
func (f *fields) u64Default(idx field) uint64 {
	if !f.seek(idx, false) {
		return 0
	}
	n, err := f.d.readU64()
	f.fail(idx, err)
	return n
}

// optU64 decodes an Option<u64>: missing or null is nil.
func (f *fields) optU64(idx field) *uint64 {
	if !f.seek(idx, false) || f.isNull() {
		return nil
	}
	n, err := f.d.readU64()
	if err != nil {
		f.fail(idx, err)
		return nil
	}
	return &n
}

func (f *fields) u32(idx field) uint32 {
	if !f.seek(idx, true) {
		return 0
	}
	n, err := f.d.readU32()
	f.fail(idx, err)
	return n
}

func (f *fields) boolean(idx field) bool {
	if !f.seek(idx, true) {
		return false
	}
	b, err := f.d.readBool()
	f.fail(idx, err)
	return b
}

func (f *fields) details(idx field) ErrorDetails {
	if !f.seek(idx, true) {
		return nil
	}
	v, err := f.d.errorDetails()
	f.fail(idx, err)
	return v
}

// carry decodes a carry_forward_events list. With optional, a missing key
// or null is nil (Option<Vec<_>>); otherwise a missing key is nil and null
// is an error (#[serde(default)] Vec<_>). A present list, even an empty
// one, decodes as a non-nil slice.
func (f *fields) carry(idx field, optional bool) []CarryForwardEvent {
	if !f.seek(idx, false) {
		return nil
	}
	if optional && f.isNull() {
		return nil
	}
	v, err := f.d.carryForwardEvents()
	f.fail(idx, err)
	return v
}

// carryForwardEvents decodes [[name,data],...].
func (d *decoder) carryForwardEvents() ([]CarryForwardEvent, error) {
	if d.peek() != '[' {
		return nil, d.invalidType("a sequence")
	}
	d.pos++
	out := []CarryForwardEvent{}
	if d.peek() == ']' {
		d.pos++
		return out, nil
	}
	for {
		c, err := d.carryForwardEvent()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return out, nil
		default:
			return nil, d.fail("expected ',' or ']'")
		}
	}
}

// carryForwardEvent decodes one [name,data] tuple.
func (d *decoder) carryForwardEvent() (CarryForwardEvent, error) {
	var c CarryForwardEvent
	if d.peek() != '[' {
		return c, d.invalidType("a tuple of size 2")
	}
	open := d.pos
	d.pos++
	var err error
	if d.peek() == ']' {
		return c, d.errAt(open, "invalid length 0, expected a tuple of size 2")
	}
	if c.Name, err = d.readString(); err != nil {
		return c, err
	}
	if d.peek() != ',' {
		if d.peek() == ']' {
			return c, d.errAt(open, "invalid length 1, expected a tuple of size 2")
		}
		return c, d.fail("expected ','")
	}
	d.pos++
	if c.Data, err = d.readString(); err != nil {
		return c, err
	}
	switch d.peek() {
	case ']':
		d.pos++
		return c, nil
	case ',':
		return c, d.errAt(open, "trailing elements, expected a tuple of size 2")
	}
	return c, d.fail("expected ']'")
}

// enumStart reads the start of an externally tagged enum value. A bare
// string is a unit variant: its name is returned with unit set. A map
// must have a single key: '{', the key and ':' are consumed and the key is
// returned; the caller decodes the value and calls enumEnd.
func (d *decoder) enumStart(enum string) (name string, unit bool, err error) {
	switch d.peek() {
	case '"':
		s, err := d.readString()
		return s, true, err
	case '{':
		if err := d.enter(); err != nil {
			return "", false, err
		}
		d.pos++
		if d.peek() == '}' {
			return "", false, d.fail("expected a map with a single key naming a %s variant", enum)
		}
		raw, s, esc, err := d.readKey()
		if err != nil {
			return "", false, err
		}
		if !esc {
			s = string(raw)
		}
		return s, false, nil
	}
	return "", false, d.invalidType("enum " + enum)
}

// enumEnd consumes the '}' closing a map-form enum value.
func (d *decoder) enumEnd(enum string) error {
	switch d.peek() {
	case '}':
		d.pos++
		d.depth--
		return nil
	case ',':
		return d.fail("expected a map with a single key naming a %s variant", enum)
	}
	return d.fail("expected '}'")
}

// unitValue consumes the value of a unit variant written in map form
// ({"Panicked":null}, which serde accepts).
func (d *decoder) unitValue() error {
	if ok, err := d.null(); ok || err != nil {
		return err
	}
	if d.flat && d.peek() == '{' {
		save := d.pos
		d.pos++
		if d.peek() == '}' {
			d.pos++
			return nil
		}
		d.pos = save
	}
	return d.invalidType("unit variant (null)")
}
