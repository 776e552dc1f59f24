package duroxide

import "github.com/duroxide-go/cdb/internal/wirejson"

// flatMaxDepth is the deepest nesting serde_json accepts in an Event: its
// recursion limit of 128 applies to the values serde buffers for
// #[serde(flatten)], counting the event object itself.
const flatMaxDepth = 127

// decoder reads duroxide wire types with the type-agnostic JSON reader of
// internal/wirejson; this file adds the key-to-field collection that lets
// a struct be decoded whatever its key order.
type decoder struct {
	wirejson.Decoder
	what string // the wire type being decoded, for errors
}

func newDecoder(data []byte, what string, opts wirejson.Options) decoder {
	return decoder{Decoder: wirejson.NewDecoder(data, opts), what: what}
}

// typed turns an error from decoding into the error the public API
// returns: a scanner error becomes a *DecodeError, and every
// *DecodeError names the wire type being decoded.
func (d *decoder) typed(err error) error {
	switch e := err.(type) {
	case *wirejson.Error:
		return &DecodeError{Type: d.what, Offset: e.Offset, Msg: e.Msg}
	case *DecodeError:
		if e.Type == "" {
			e.Type = d.what
		}
	}
	return err
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
	fRestartOf
	fExecutionTimeoutMs
	fInstanceTimeoutMs
	fTimeoutMs
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
	fRestartOf:           "restart_of",
	fExecutionTimeoutMs:  "execution_timeout_ms",
	fInstanceTimeoutMs:   "instance_timeout_ms",
	fTimeoutMs:           "timeout_ms",
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

// collect scans the object at the current position, validating every
// value and recording the positions of known keys. expected describes the
// value for a type error (e.g. "struct Event").
func (d *decoder) collect(f *fields, expected string) error {
	f.d = d
	if d.Peek() != '{' {
		return d.InvalidType(expected)
	}
	f.objPos = d.Pos()
	if err := d.Enter(); err != nil {
		return err
	}
	d.Advance()
	if d.Peek() == '}' {
		d.Advance()
		d.Leave()
		return nil
	}
	for {
		raw, s, esc, err := d.ReadKey()
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
				f.start[idx] = d.PeekPos()
			}
		}
		if err := d.SkipValue(); err != nil {
			return err
		}
		switch d.Peek() {
		case ',':
			d.Advance()
		case '}':
			d.Advance()
			d.Leave()
			return nil
		default:
			return d.Failf("expected ',' or '}'")
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
	if d.Peek() != '[' {
		return d.collect(f, l.name)
	}
	f.d = d
	f.objPos = d.Pos()
	if err := d.Enter(); err != nil {
		return err
	}
	d.Advance()
	n := 0
	if d.Peek() == ']' {
		d.Advance()
		d.Leave()
	} else {
		for {
			if n == len(l.order) {
				return d.Failf("trailing elements, expected %s with %d elements", l.name, len(l.order))
			}
			idx := l.order[n]
			f.present |= 1 << idx
			f.start[idx] = d.PeekPos()
			if err := d.SkipValue(); err != nil {
				return err
			}
			n++
			c := d.Peek()
			if c == ']' {
				d.Advance()
				d.Leave()
				break
			}
			if c != ',' {
				return d.Failf("expected ',' or ']'")
			}
			d.Advance()
		}
	}
	for _, idx := range l.order[n:] {
		if l.defaults&(1<<idx) == 0 {
			return d.Errorf(f.objPos, "invalid length %d, expected %s with %d elements", n, l.name, len(l.order))
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
	f.d.SetPos(f.start[idx])
	return true
}

func (f *fields) fail(idx field, err error) {
	if err != nil && f.err == nil {
		f.err = prefixField(err, fieldNames[idx])
	}
}

// isNull reports whether the (present) value at the decoder is null.
func (f *fields) isNull() bool {
	// collect validated the value, so consuming a null cannot fail.
	isNull, _ := f.d.Null()
	return isNull
}

func (f *fields) str(idx field) string {
	if !f.seek(idx, true) {
		return ""
	}
	s, err := f.d.ReadString()
	f.fail(idx, err)
	return s
}

// optStr decodes an Option<String>: missing or null is nil.
func (f *fields) optStr(idx field) *string {
	if !f.seek(idx, false) || f.isNull() {
		return nil
	}
	s, err := f.d.ReadString()
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
	n, err := f.d.ReadU64()
	f.fail(idx, err)
	return n
}

// u64Default decodes a #[serde(default)] u64: missing is 0, null is an
// error.
func (f *fields) u64Default(idx field) uint64 {
	if !f.seek(idx, false) {
		return 0
	}
	n, err := f.d.ReadU64()
	f.fail(idx, err)
	return n
}

// optU64 decodes an Option<u64>: missing or null is nil.
func (f *fields) optU64(idx field) *uint64 {
	if !f.seek(idx, false) || f.isNull() {
		return nil
	}
	n, err := f.d.ReadU64()
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
	n, err := f.d.ReadU32()
	f.fail(idx, err)
	return n
}

func (f *fields) boolean(idx field) bool {
	if !f.seek(idx, true) {
		return false
	}
	b, err := f.d.ReadBool()
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
	if d.Peek() != '[' {
		return nil, d.InvalidType("a sequence")
	}
	d.Advance()
	out := []CarryForwardEvent{}
	if d.Peek() == ']' {
		d.Advance()
		return out, nil
	}
	for {
		c, err := d.carryForwardEvent()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		switch d.Peek() {
		case ',':
			d.Advance()
		case ']':
			d.Advance()
			return out, nil
		default:
			return nil, d.Failf("expected ',' or ']'")
		}
	}
}

// carryForwardEvent decodes one [name,data] tuple.
func (d *decoder) carryForwardEvent() (CarryForwardEvent, error) {
	var c CarryForwardEvent
	if d.Peek() != '[' {
		return c, d.InvalidType("a tuple of size 2")
	}
	open := d.Pos()
	d.Advance()
	var err error
	if d.Peek() == ']' {
		return c, d.Errorf(open, "invalid length 0, expected a tuple of size 2")
	}
	if c.Name, err = d.ReadString(); err != nil {
		return c, err
	}
	if d.Peek() != ',' {
		if d.Peek() == ']' {
			return c, d.Errorf(open, "invalid length 1, expected a tuple of size 2")
		}
		return c, d.Failf("expected ','")
	}
	d.Advance()
	if c.Data, err = d.ReadString(); err != nil {
		return c, err
	}
	switch d.Peek() {
	case ']':
		d.Advance()
		return c, nil
	case ',':
		return c, d.Errorf(open, "trailing elements, expected a tuple of size 2")
	}
	return c, d.Failf("expected ']'")
}
