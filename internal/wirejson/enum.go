package wirejson

// serde writes an externally tagged enum value as a bare string (a unit
// variant) or as a map with a single key naming the variant. The helpers
// below read that framing; the caller decodes the variant's value.

// EnumStart reads the start of an externally tagged value of the named
// enum. A bare string is a unit variant: its name is returned with unit
// set. A map must have a single key: '{', the key and ':' are consumed and
// the key is returned; the caller decodes the value and calls EnumEnd.
func (d *Decoder) EnumStart(enum string) (name string, unit bool, err error) {
	switch d.Peek() {
	case '"':
		s, err := d.ReadString()
		return s, true, err
	case '{':
		if err := d.Enter(); err != nil {
			return "", false, err
		}
		d.pos++
		if d.Peek() == '}' {
			return "", false, d.Failf("expected a map with a single key naming a %s variant", enum)
		}
		raw, s, esc, err := d.ReadKey()
		if err != nil {
			return "", false, err
		}
		if !esc {
			s = string(raw)
		}
		return s, false, nil
	}
	return "", false, d.InvalidType("enum " + enum)
}

// EnumEnd consumes the '}' closing a map-form enum value.
func (d *Decoder) EnumEnd(enum string) error {
	switch d.Peek() {
	case '}':
		d.pos++
		d.depth--
		return nil
	case ',':
		return d.Failf("expected a map with a single key naming a %s variant", enum)
	}
	return d.Failf("expected '}'")
}

// UnitValue consumes the value of a unit variant written in map form
// ({"Panicked":null}, which serde accepts; in buffered mode also
// {"Panicked":{}}).
func (d *Decoder) UnitValue() error {
	if ok, err := d.Null(); ok || err != nil {
		return err
	}
	if d.buffered && d.Peek() == '{' {
		save := d.pos
		d.pos++
		if d.Peek() == '}' {
			d.pos++
			return nil
		}
		d.pos = save
	}
	return d.InvalidType("unit variant (null)")
}
