package wirejson

import "math"

// scanNumber consumes a number token per the JSON grammar and reports
// whether it is a plain non-negative integer.
func (d *Decoder) scanNumber() (tok []byte, isUint bool, err error) {
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
		return nil, false, d.Errorf(i, "invalid number")
	}
	if i < len(data) && data[i] == '.' {
		isUint = false
		i++
		if i >= len(data) || !isDigit(data[i]) {
			return nil, false, d.Errorf(i, "invalid number")
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
			return nil, false, d.Errorf(i, "invalid number")
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && isDigit(data[i]) { // e.g. "01"
		return nil, false, d.Errorf(i, "invalid number")
	}
	d.pos = i
	return data[start:i], isUint, nil
}

// ReadU64 decodes a u64 without passing through float64: a negative,
// fractional or exponent form is a type error, as in serde.
func (d *Decoder) ReadU64() (uint64, error) {
	c := d.Peek()
	if c != '-' && !isDigit(c) {
		return 0, d.InvalidType("u64")
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
		return 0, d.Errorf(start, "invalid type: %s `%s`, expected u64", what, tok)
	}
	var n uint64
	for _, c := range tok {
		dig := uint64(c - '0')
		if n > (math.MaxUint64-dig)/10 {
			return 0, d.Errorf(start, "number `%s` out of range for u64", tok)
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

// ReadU32 decodes a u32, rejecting values out of range.
func (d *Decoder) ReadU32() (uint32, error) {
	start := d.PeekPos()
	n, err := d.ReadU64()
	if err != nil {
		return 0, err
	}
	if n > math.MaxUint32 {
		return 0, d.Errorf(start, "invalid value: integer `%d`, expected u32", n)
	}
	return uint32(n), nil
}
