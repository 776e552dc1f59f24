package claimcheck

import (
	"strconv"
	"strings"
)

// escape makes an instance ID one path segment: every byte outside
// [a-z0-9_-] (and outside [A-Z] unless foldCase) becomes %XX with upper-case
// hex. So "/" never splits an ID into two segments (deleting instance "a"
// cannot reach "a/b"), "." and ".." never appear, and with foldCase two IDs
// differing only in case stay two names on a case-insensitive file system.
func escape(id string, foldCase bool) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		case c >= 'A' && c <= 'Z' && !foldCase:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// instancePrefix is the prefix of every object name of instance.
func (c *Codec) instancePrefix(instance string) string {
	return escape(instance, c.foldCase) + "/"
}

// executionPrefix is the prefix of every object name of one execution.
func (c *Codec) executionPrefix(instance string, execution uint64) string {
	return c.instancePrefix(instance) + strconv.FormatUint(execution, 10) + "/"
}

// objectName is content-addressed within its execution, so writing the
// same payload again (a retried turn, a second worker running the same
// activity) names the same object.
func (c *Codec) objectName(instance string, execution uint64, sum string) string {
	return c.executionPrefix(instance, execution) + sum
}

// validName reports whether name has the shape objectName gives, so a
// forged reference cannot read another path ("../") of a file store.
func validName(name string) bool {
	parts := strings.Split(name, "/")
	if len(parts) != 3 || parts[0] == "" || len(parts[2]) != 64 {
		return false
	}
	for i := 0; i < len(parts[0]); i++ {
		c := parts[0][i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '%') {
			return false
		}
	}
	if _, err := strconv.ParseUint(parts[1], 10, 64); err != nil {
		return false
	}
	return isHex(parts[2])
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
