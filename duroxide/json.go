package duroxide

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/duroxide-go/cdb/internal/wirejson"
)

// This file holds the public entry points and error types of the JSON wire
// format. The encoders live in json_encode.go and json_event.go,
// json_workitem.go, json_details.go; the strict JSON reader is
// internal/wirejson, and json_fields.go maps its keys to struct fields.
//
// Encoding rules (byte-compatible with Rust serde_json's compact output):
//   - keys in Rust declaration order, no whitespace;
//   - strings escape only '"', '\\' and control characters below U+0020
//     (\b \t \n \f \r, otherwise \u00xx with lowercase hex); '<', '>', '&',
//     U+2028, U+2029 and all other non-ASCII characters are written as is;
//   - invalid UTF-8 in a Go string is written as U+FFFD, as encoding/json
//     does (Rust strings cannot hold invalid UTF-8);
//   - integers are written in decimal and never pass through float64.
//
// Decoding rules (matching serde's derived Deserialize):
//   - the input must be one valid, UTF-8 JSON value, optionally surrounded
//     by whitespace; lone surrogate \u escapes are rejected;
//   - object keys may come in any order; unknown keys are ignored (their
//     values must still be valid JSON); a duplicate known key is an error;
//   - a missing non-optional field is an error; a missing optional field
//     decodes as nil (or the serde default: 0, an empty slice);
//   - integers must be non-negative integer literals within range (no
//     fraction or exponent); u32 fields reject values above 4294967295;
//   - struct variants may also be given in serde's sequence form, fields in
//     declaration order ({"CancelInstance":["i","reason"]}); unit variants
//     in map form ({"Panicked":null});
//   - serde decodes the flattened part of an Event from a buffered copy, so
//     an Event additionally rejects nesting deeper than 127 levels, ignored
//     strings with lone surrogates and ignored numbers beyond float64, and
//     accepts {} as the value of a map-form unit variant;
//   - an unknown variant tag yields an *UnknownVariantError; any other
//     problem yields a *DecodeError.

// ErrUnknownVariant is matched by errors.Is against every
// *UnknownVariantError.
var ErrUnknownVariant = errors.New("duroxide: unknown variant")

// UnknownVariantError reports a variant tag this package does not know: an
// Event "type" or an externally tagged WorkItem, ErrorDetails,
// AppErrorKind, ConfigErrorKind or PoisonMessageType name. Typically the
// data was written by a newer (or feature-gated) duroxide. It matches
// ErrUnknownVariant with errors.Is.
type UnknownVariantError struct {
	// Enum is the Rust enum being decoded: "EventKind", "WorkItem",
	// "ErrorDetails", "AppErrorKind", "ConfigErrorKind" or
	// "PoisonMessageType".
	Enum string
	// Variant is the tag found in the input.
	Variant string
	// Field is the dotted path of the enclosing field ("" at the top level),
	// e.g. "details" or "ActivityFailed.details.Application.kind".
	Field string
}

// Error describes the unknown variant.
func (e *UnknownVariantError) Error() string {
	s := "duroxide: unknown " + e.Enum + " variant " + strconv.Quote(e.Variant)
	if e.Field != "" {
		s += " in field " + strconv.Quote(e.Field)
	}
	return s
}

// Is reports whether target is ErrUnknownVariant.
func (e *UnknownVariantError) Is(target error) bool { return target == ErrUnknownVariant }

// DecodeError reports input that is not a valid encoding of a duroxide wire
// type: malformed JSON, a missing or duplicate field, a value of the wrong
// JSON type, or a number out of range.
type DecodeError struct {
	// Type is the wire type being decoded: "Event", "WorkItem",
	// "ErrorDetails", "AppErrorKind", "PoisonMessageType" or
	// "CarryForwardEvent".
	Type string
	// Field is the dotted path of the offending field, "" at the top level,
	// e.g. "details.Application.retryable".
	Field string
	// Offset is the byte offset in the input at or near the problem.
	Offset int
	// Msg describes the problem.
	Msg string
}

// Error describes the problem and where it is.
func (e *DecodeError) Error() string {
	s := "duroxide: cannot decode " + e.Type
	if e.Field != "" {
		s += " field " + strconv.Quote(e.Field)
	}
	return s + " at offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// prefixField prepends name to the field path of a decoding error. A
// scanner error becomes a *DecodeError so that it can carry the path;
// decoder.typed fills in its Type.
func prefixField(err error, name string) error {
	switch e := err.(type) {
	case *wirejson.Error:
		return &DecodeError{Field: name, Offset: e.Offset, Msg: e.Msg}
	case *DecodeError:
		e.Field = joinPath(name, e.Field)
	case *UnknownVariantError:
		e.Field = joinPath(name, e.Field)
	}
	return err
}

func joinPath(a, b string) string {
	if b == "" {
		return a
	}
	return a + "." + b
}

// UnmarshalEvent decodes one Event from its JSON wire form.
func UnmarshalEvent(data []byte) (Event, error) {
	var e Event
	d := newDecoder(data, "Event", wirejson.Options{Buffered: true, MaxDepth: flatMaxDepth})
	err := d.event(&e)
	if err == nil {
		err = d.Finish()
	}
	if err != nil {
		return Event{}, d.typed(err)
	}
	return e, nil
}

// MarshalJSON encodes the event in duroxide's wire form. It fails if Kind
// is nil or holds invalid values (for example a nil ErrorDetails).
//
// Note that json.Marshal re-escapes '<', '>', '&', U+2028 and U+2029 in
// the output of any Marshaler; call MarshalJSON (or use a json.Encoder with
// SetEscapeHTML(false)) where the exact serde_json bytes matter.
func (e Event) MarshalJSON() ([]byte, error) {
	return AppendEvent(make([]byte, 0, 256), &e)
}

// UnmarshalJSON decodes the event from its wire form, replacing *e. Unlike
// the encoding/json convention, a JSON null is an error: Rust duroxide
// cannot read it either.
func (e *Event) UnmarshalJSON(data []byte) error {
	ev, err := UnmarshalEvent(data)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

// AppendEvent appends the wire form of e to dst, for callers that encode
// many events into one buffer.
func AppendEvent(dst []byte, e *Event) ([]byte, error) {
	return appendEvent(dst, e)
}

// MarshalWorkItem encodes w in its externally tagged wire form,
// {"Variant":{...}}.
func MarshalWorkItem(w WorkItem) ([]byte, error) {
	return appendWorkItem(make([]byte, 0, 192), w)
}

// UnmarshalWorkItem decodes any WorkItem variant. The result holds a value
// (not a pointer) of one of the *Item types.
func UnmarshalWorkItem(data []byte) (WorkItem, error) {
	d := newDecoder(data, "WorkItem", wirejson.Options{})
	w, err := d.workItem()
	if err == nil {
		err = d.Finish()
	}
	if err != nil {
		return nil, d.typed(err)
	}
	return w, nil
}

// MarshalErrorDetails encodes d in its externally tagged wire form,
// {"Variant":{...}}.
func MarshalErrorDetails(d ErrorDetails) ([]byte, error) {
	return appendErrorDetails(make([]byte, 0, 128), d)
}

// UnmarshalErrorDetails decodes any ErrorDetails variant. The result holds
// a value (not a pointer) of InfrastructureError, ConfigurationError,
// ApplicationError or PoisonError.
func UnmarshalErrorDetails(data []byte) (ErrorDetails, error) {
	d := newDecoder(data, "ErrorDetails", wirejson.Options{})
	v, err := d.errorDetails()
	if err == nil {
		err = d.Finish()
	}
	if err != nil {
		return nil, d.typed(err)
	}
	return v, nil
}

// unmarshalVariant decodes data with dec and stores it in *dst if it is
// the variant T; any other variant is an error.
func unmarshalVariant[I any, T any](what string, data []byte, dec func([]byte) (I, error), dst *T) error {
	v, err := dec(data)
	if err != nil {
		return err
	}
	t, ok := any(v).(T)
	if !ok {
		var want T
		return &DecodeError{Type: what, Msg: fmt.Sprintf("expected variant %s, found %s", variantName(want), variantName(v))}
	}
	*dst = t
	return nil
}

func variantName(v any) string {
	switch x := v.(type) {
	case WorkItem:
		return x.Variant()
	case ErrorDetails:
		return x.Variant()
	}
	return fmt.Sprintf("%T", v)
}

// EncodeError reports a Go value that has no wire form: a nil Kind,
// WorkItem or ErrorDetails, an enum value Rust duroxide does not define,
// or a field set that its variant cannot carry (which would be lost).
type EncodeError struct {
	// Path locates the value, e.g. "Event 3 (ActivityFailed).details".
	Path string
	// Msg describes the problem.
	Msg string
}

// Error describes the problem and where it is.
func (e *EncodeError) Error() string {
	if e.Path == "" {
		return "duroxide: cannot encode: " + e.Msg
	}
	return "duroxide: cannot encode " + e.Path + ": " + e.Msg
}

func quote(s string) string { return strconv.Quote(s) }

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// prefixEncode prepends ctx to the path of an *EncodeError.
func prefixEncode(err error, ctx string) error {
	if e, ok := err.(*EncodeError); ok {
		e.Path = joinPath(ctx, e.Path)
	}
	return err
}
