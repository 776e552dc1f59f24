package wirejson

import (
	"unicode/utf16"
	"unicode/utf8"
)

// scanString consumes the string token at d.pos (which is '"') and returns
// its raw contents and whether they contain escapes. It validates escapes,
// rejects raw control characters and checks UTF-8.
func (d *Decoder) scanString() (raw []byte, escaped bool, err error) {
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
			return nil, false, d.Failf("EOF while parsing a string")
		}
		c := data[i]
		switch {
		case c == '"':
			raw = data[start:i]
			if !ascii && !utf8.Valid(raw) {
				return nil, false, d.Errorf(start, "invalid UTF-8 in string")
			}
			d.pos = i + 1
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(data) {
				d.pos = i + 1
				return nil, false, d.Failf("EOF while parsing a string")
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) {
					d.pos = len(data)
					return nil, false, d.Failf("EOF while parsing a string")
				}
				for j := i + 2; j < i+6; j++ {
					if hexVal(data[j]) < 0 {
						return nil, false, d.Errorf(j, "invalid escape")
					}
				}
				i += 6
			default:
				return nil, false, d.Errorf(i, "invalid escape")
			}
		case c < 0x20:
			return nil, false, d.Errorf(i, "control character (\\u0000-\\u001F) found while parsing a string")
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
func (d *Decoder) unescape(raw []byte, base int) (string, error) {
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
					return "", d.Errorf(base+i, "lone leading surrogate in hex escape")
				}
				r2 := hex4(raw[i+8 : i+12])
				if r2 < 0xDC00 || r2 > 0xDFFF {
					return "", d.Errorf(base+i, "lone leading surrogate in hex escape")
				}
				out = utf8.AppendRune(out, utf16.DecodeRune(r, r2))
				i += 12
				continue
			case utf16.IsSurrogate(r):
				return "", d.Errorf(base+i, "lone trailing surrogate in hex escape")
			}
			out = utf8.AppendRune(out, r)
			i += 6
			continue
		}
		i += 2
	}
	return string(out), nil
}

// ReadString decodes a JSON string.
func (d *Decoder) ReadString() (string, error) {
	if d.Peek() != '"' {
		return "", d.InvalidType("a string")
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

// ReadKey reads an object key and the following ':'. A key without
// escapes is returned as raw, a slice of the input (so a lookup by
// string(raw) does not allocate), with esc false; otherwise the unescaped
// key is returned in s with esc true.
func (d *Decoder) ReadKey() (raw []byte, s string, esc bool, err error) {
	if d.Peek() != '"' {
		return nil, "", false, d.Failf("key must be a string")
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
	if d.Peek() != ':' {
		return nil, "", false, d.Failf("expected ':'")
	}
	d.pos++
	return raw, s, esc, nil
}

// skipKey consumes an object key and the following ':'.
func (d *Decoder) skipKey() error {
	if d.Peek() != '"' {
		return d.Failf("key must be a string")
	}
	if err := d.skipString(); err != nil {
		return err
	}
	if d.Peek() != ':' {
		return d.Failf("expected ':'")
	}
	d.pos++
	return nil
}

// skipString consumes a string. In buffered mode escapes are fully
// decoded, so lone surrogates are rejected as serde does; otherwise serde
// only checks the escape syntax of ignored strings.
func (d *Decoder) skipString() error {
	start := d.pos + 1
	raw, esc, err := d.scanString()
	if err == nil && esc && d.buffered {
		_, err = d.unescape(raw, start)
	}
	return err
}
