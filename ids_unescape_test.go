package cdb

import (
	"strconv"
	"strings"
)

// unescapeIDPart reverses escapeIDPart (ids.go); only the tests need to
// read an escaped part back, to show the escaping is injective.
func unescapeIDPart(s string) (string, bool) {
	if !strings.Contains(s, "~") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '~' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil || !(mustEscape(byte(v)) || (v == ' ' && i+3 == len(s))) {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}
