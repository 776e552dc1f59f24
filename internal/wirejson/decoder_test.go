package wirejson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// wantErr checks that err is an *Error with the given offset and message.
func wantErr(t *testing.T, what string, err error, offset int, msg string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: got %v (%T), want *Error %q at %d", what, err, err, msg, offset)
	}
	if e.Offset != offset || e.Msg != msg {
		t.Fatalf("%s: got %q at %d, want %q at %d", what, e.Msg, e.Offset, msg, offset)
	}
}

func TestReadString(t *testing.T) {
	ok := []struct{ in, want string }{
		{`"plain"`, "plain"},
		{` "x" `, "x"},
		{`"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t"},
		{`"\u0041\u00e9\u20AC"`, "Aé€"},
		{`"\ud83d\ude00"`, "😀"},
		{`"héllo wörld"`, "héllo wörld"},
		{`""`, ""},
	}
	for _, c := range ok {
		d := NewDecoder([]byte(c.in), Options{})
		got, err := d.ReadString()
		if err != nil || got != c.want {
			t.Errorf("ReadString(%s) = %q, %v; want %q", c.in, got, err, c.want)
		}
		if err := d.Finish(); err != nil {
			t.Errorf("ReadString(%s) left input: %v", c.in, err)
		}
	}
	bad := []struct {
		in     string
		offset int
		msg    string
	}{
		{`"abc`, 4, "EOF while parsing a string"},
		{`"abc\`, 5, "EOF while parsing a string"},
		{`"\u12`, 5, "EOF while parsing a string"},
		{`"a\x"`, 2, "invalid escape"},
		{`"\u12g4"`, 5, "invalid escape"},
		{"\"a\x01\"", 2, `control character (\u0000-\u001F) found while parsing a string`},
		{"\"a\xff\"", 1, "invalid UTF-8 in string"},
		{`"x\ud83d"`, 2, "lone leading surrogate in hex escape"},
		{`"\ud83d\u0041"`, 1, "lone leading surrogate in hex escape"},
		{`"\ude00"`, 1, "lone trailing surrogate in hex escape"},
		{` 12`, 1, "invalid type: number, expected a string"},
		{` {"a":1}`, 1, "invalid type: map, expected a string"},
		{`[1,}`, 3, "expected value"},
		{``, 0, "EOF while parsing a value"},
	}
	for _, c := range bad {
		d := NewDecoder([]byte(c.in), Options{})
		_, err := d.ReadString()
		wantErr(t, "ReadString("+c.in+")", err, c.offset, c.msg)
	}
}

func TestReadU64AndU32(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{{"0", 0}, {" 42 ", 42}, {"18446744073709551615", 1<<64 - 1}} {
		d := NewDecoder([]byte(c.in), Options{})
		got, err := d.ReadU64()
		if err != nil || got != c.want || d.Finish() != nil {
			t.Errorf("ReadU64(%s) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	bad := []struct {
		in     string
		offset int
		msg    string
	}{
		{"18446744073709551616", 0, "number `18446744073709551616` out of range for u64"},
		{" -1", 1, "invalid type: negative integer `-1`, expected u64"},
		{"1.5", 0, "invalid type: floating point `1.5`, expected u64"},
		{"1e3", 0, "invalid type: floating point `1e3`, expected u64"},
		{"-0.5", 0, "invalid type: floating point `-0.5`, expected u64"},
		{"01", 1, "invalid number"},
		{"1.", 2, "invalid number"},
		{"1e", 2, "invalid number"},
		{"-", 1, "invalid number"},
		{`"1"`, 0, "invalid type: string, expected u64"},
		{`true`, 0, "invalid type: boolean, expected u64"},
	}
	for _, c := range bad {
		d := NewDecoder([]byte(c.in), Options{})
		_, err := d.ReadU64()
		wantErr(t, "ReadU64("+c.in+")", err, c.offset, c.msg)
	}
	d := NewDecoder([]byte(" 4294967295"), Options{})
	if n, err := d.ReadU32(); err != nil || n != 1<<32-1 {
		t.Errorf("ReadU32(max) = %d, %v", n, err)
	}
	d = NewDecoder([]byte(" 4294967296"), Options{})
	_, err := d.ReadU32()
	wantErr(t, "ReadU32(max+1)", err, 1, "invalid value: integer `4294967296`, expected u32")
}

func TestLiterals(t *testing.T) {
	d := NewDecoder([]byte(" true false"), Options{})
	if b, err := d.ReadBool(); err != nil || !b {
		t.Fatalf("ReadBool(true) = %v, %v", b, err)
	}
	if b, err := d.ReadBool(); err != nil || b {
		t.Fatalf("ReadBool(false) = %v, %v", b, err)
	}
	d = NewDecoder([]byte("nul"), Options{})
	_, err := d.ReadBool()
	wantErr(t, "ReadBool(nul)", err, 0, "expected value")
	d = NewDecoder([]byte("tru"), Options{})
	_, err = d.ReadBool()
	wantErr(t, "ReadBool(tru)", err, 0, "expected value")

	d = NewDecoder([]byte(" null 1"), Options{})
	if ok, err := d.Null(); !ok || err != nil {
		t.Fatalf("Null(null) = %v, %v", ok, err)
	}
	if ok, err := d.Null(); ok || err != nil || d.Peek() != '1' {
		t.Fatalf("Null(1) = %v, %v and consumed input", ok, err)
	}
	d = NewDecoder([]byte("nil"), Options{})
	_, err = d.Null()
	wantErr(t, "Null(nil)", err, 0, "expected value")
}

func TestReadKey(t *testing.T) {
	d := NewDecoder([]byte(` "plain" : 1`), Options{})
	raw, s, esc, err := d.ReadKey()
	if err != nil || esc || string(raw) != "plain" || s != "" || d.Peek() != '1' {
		t.Fatalf("ReadKey(plain) = %q, %q, %v, %v", raw, s, esc, err)
	}
	d = NewDecoder([]byte(`"a\u0062":1`), Options{})
	_, s, esc, err = d.ReadKey()
	if err != nil || !esc || s != "ab" {
		t.Fatalf("ReadKey(escaped) = %q, %v, %v", s, esc, err)
	}
	d = NewDecoder([]byte(`"k" 1`), Options{})
	_, _, _, err = d.ReadKey()
	wantErr(t, "ReadKey(no colon)", err, 4, "expected ':'")
	d = NewDecoder([]byte(`1:2`), Options{})
	_, _, _, err = d.ReadKey()
	wantErr(t, "ReadKey(number)", err, 0, "key must be a string")
}

func TestSkipValue(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `{"a":[1,2,{"b":null}],"c":"\ud83d"}`, ` [ true , false , -1.5e+3 ] `,
		strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
	} {
		d := NewDecoder([]byte(in), Options{})
		if err := d.SkipValue(); err != nil {
			t.Errorf("SkipValue(%.40s): %v", in, err)
		} else if err := d.Finish(); err != nil {
			t.Errorf("SkipValue(%.40s) stopped early: %v", in, err)
		}
	}
	bad := []struct {
		in     string
		offset int
		msg    string
	}{
		{`[1 2]`, 3, "expected ',' or ']'"},
		{`{"a":1 "b":2}`, 7, "expected ',' or '}'"},
		{`{"a" 1}`, 5, "expected ':'"},
		{`{1:2}`, 1, "key must be a string"},
		{`{"a":1,}`, 7, "key must be a string"},
		{`[1,]`, 3, "expected value"},
		{`[`, 1, "EOF while parsing a value"},
		{`x`, 0, "expected value"},
	}
	for _, c := range bad {
		d := NewDecoder([]byte(c.in), Options{})
		wantErr(t, "SkipValue("+c.in+")", d.SkipValue(), c.offset, c.msg)
	}
}

func TestDepthLimit(t *testing.T) {
	in := []byte(strings.Repeat("[", 4) + strings.Repeat("]", 4))
	d := NewDecoder(in, Options{MaxDepth: 4})
	if err := d.SkipValue(); err != nil {
		t.Fatalf("depth 4 with MaxDepth 4: %v", err)
	}
	d = NewDecoder(in, Options{MaxDepth: 3})
	wantErr(t, "depth 4 with MaxDepth 3", d.SkipValue(), 3, "recursion limit exceeded")

	// Enter and Leave share the count with SkipValue.
	d = NewDecoder([]byte(`[[]]`), Options{MaxDepth: 2})
	if err := d.Enter(); err != nil {
		t.Fatal(err)
	}
	d.Advance()
	if err := d.SkipValue(); err != nil {
		t.Fatalf("inner value at depth 2: %v", err)
	}
	if err := d.Enter(); err != nil {
		t.Fatalf("Enter to depth 2: %v", err)
	}
	wantErr(t, "Enter to depth 3", d.Enter(), 3, "recursion limit exceeded")
	d.Leave()
	d.Leave()
	if err := d.Enter(); err != nil {
		t.Fatalf("Enter after Leave: %v", err)
	}
}

// Buffered mode rejects what serde rejects when it reads from buffered
// Content; direct mode accepts the same input.
func TestBufferedSkip(t *testing.T) {
	cases := []struct {
		in     string
		offset int
		msg    string
	}{
		{`["\ud800"]`, 2, "lone leading surrogate in hex escape"},
		{`{"\udc00":1}`, 2, "lone trailing surrogate in hex escape"},
		{`[1e400]`, 1, "number out of range"},
		{`[-1e400]`, 1, "number out of range"},
	}
	for _, c := range cases {
		d := NewDecoder([]byte(c.in), Options{})
		if err := d.SkipValue(); err != nil {
			t.Errorf("direct SkipValue(%s): %v", c.in, err)
		}
		d = NewDecoder([]byte(c.in), Options{Buffered: true})
		wantErr(t, "buffered SkipValue("+c.in+")", d.SkipValue(), c.offset, c.msg)
	}
}

func TestEnum(t *testing.T) {
	d := NewDecoder([]byte(` "Unit"`), Options{})
	name, unit, err := d.EnumStart("E")
	if err != nil || !unit || name != "Unit" {
		t.Fatalf("EnumStart(unit) = %q, %v, %v", name, unit, err)
	}

	d = NewDecoder([]byte(`{"V":null}`), Options{})
	name, unit, err = d.EnumStart("E")
	if err != nil || unit || name != "V" {
		t.Fatalf("EnumStart(map) = %q, %v, %v", name, unit, err)
	}
	if err := d.UnitValue(); err != nil {
		t.Fatal(err)
	}
	if err := d.EnumEnd("E"); err != nil || d.Finish() != nil {
		t.Fatalf("EnumEnd: %v", err)
	}

	d = NewDecoder([]byte(`{}`), Options{})
	_, _, err = d.EnumStart("E")
	wantErr(t, "EnumStart({})", err, 1, "expected a map with a single key naming a E variant")
	d = NewDecoder([]byte(`{"A":null,"B":null}`), Options{})
	if _, _, err := d.EnumStart("E"); err != nil {
		t.Fatal(err)
	}
	if err := d.UnitValue(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "EnumEnd(two keys)", d.EnumEnd("E"), 9, "expected a map with a single key naming a E variant")
	d = NewDecoder([]byte(`7`), Options{})
	_, _, err = d.EnumStart("E")
	wantErr(t, "EnumStart(7)", err, 0, "invalid type: number, expected enum E")

	// {} as a unit variant's value is accepted only in buffered mode.
	d = NewDecoder([]byte(`{}`), Options{Buffered: true})
	if err := d.UnitValue(); err != nil || d.Finish() != nil {
		t.Fatalf("buffered UnitValue({}): %v", err)
	}
	d = NewDecoder([]byte(`{}`), Options{})
	wantErr(t, "direct UnitValue({})", d.UnitValue(), 0, "invalid type: map, expected unit variant (null)")
	d = NewDecoder([]byte(`{"a":1}`), Options{Buffered: true})
	wantErr(t, "buffered UnitValue({...})", d.UnitValue(), 0, "invalid type: map, expected unit variant (null)")
}

func TestFinishAndPositions(t *testing.T) {
	d := NewDecoder([]byte(`1 x`), Options{})
	if _, err := d.ReadU64(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Finish", d.Finish(), 2, "trailing characters after the JSON value")
	if d.Pos() != 2 || d.PeekPos() != 2 {
		t.Fatalf("Pos = %d, want 2", d.Pos())
	}
	d.SetPos(0)
	if n, err := d.ReadU64(); err != nil || n != 1 {
		t.Fatalf("after SetPos(0): %d, %v", n, err)
	}
	if got := (&Error{Offset: 3, Msg: "m"}).Error(); got != "wirejson: at offset 3: m" {
		t.Fatalf("Error() = %q", got)
	}
}

// SkipValue accepts exactly the valid JSON that encoding/json accepts
// (for valid UTF-8; this reader also rejects invalid UTF-8 in strings).
func FuzzSkipValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,true,null,"\u00e9"]}`, `[1,]`, `01`, `"\ud800"`, `{"a" 1}`, ` [ ] `, `1e`, "\"\x1f\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return
		}
		d := NewDecoder(data, Options{})
		err := d.SkipValue()
		if err == nil {
			err = d.Finish()
		}
		if got, want := err == nil, json.Valid(data); got != want {
			t.Fatalf("%q: SkipValue accepts = %v, encoding/json = %v (%v)", data, got, want, err)
		}
	})
}

// ReadString reads back exactly what encoding/json writes for a string.
func FuzzReadString(f *testing.F) {
	for _, s := range []string{"", "plain", "<&>\u2028", "\x00\x1f\"\\", "😀", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		if err := json.Unmarshal(enc, &want); err != nil {
			t.Fatal(err)
		}
		d := NewDecoder(enc, Options{})
		got, err := d.ReadString()
		if err != nil || got != want || d.Finish() != nil {
			t.Fatalf("ReadString(%s) = %q, %v; want %q", enc, got, err, want)
		}
	})
}
