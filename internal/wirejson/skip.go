package wirejson

import (
	"math"
	"strconv"
)

// SkipValue consumes and validates any JSON value. It is iterative, so
// deeply nested input cannot exhaust the stack; nesting is bounded only by
// Options.MaxDepth.
func (d *Decoder) SkipValue() error {
	var stackBuf [16]byte
	stack := stackBuf[:0] // the closing bracket of each open container
	for {
		// Consume one value, or open a container and continue with its
		// first value.
		switch c := d.Peek(); c {
		case '{', '[':
			if err := d.Enter(); err != nil {
				return err
			}
			d.pos++
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			if d.Peek() == closer {
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
			c := d.Peek()
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
				return d.Failf("expected ',' or '%c'", closer)
			}
			d.pos++
			d.depth--
			stack = stack[:len(stack)-1]
		}
	}
}

// skipScalar consumes a string, number or literal starting with c.
func (d *Decoder) skipScalar(c byte) error {
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
		return d.Failf("EOF while parsing a value")
	}
	if c == '-' || isDigit(c) {
		start := d.pos
		tok, _, err := d.scanNumber()
		if err == nil && d.buffered {
			// serde buffers the number as u64, i64 or f64; one beyond the
			// range of f64 is an error.
			if f, _ := strconv.ParseFloat(string(tok), 64); math.IsInf(f, 0) {
				return d.Errorf(start, "number out of range")
			}
		}
		return err
	}
	return d.Failf("expected value")
}
