package cosmos

import (
	"bytes"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
)

// The SDK sends a transactional batch as one JSON array built with
// encoding/json, which escapes every '<', '>' and '&' in the documents to
// a six-byte \u escape (and U+2028, U+2029 too). A 1 MB HTML payload
// becomes a request of several MB, over the service's 2 MB request limit
// (413), although the document itself is 1 MB. The documents are written
// without those escapes (wirejson.Marshal); this policy takes the SDK's
// back out of batch bodies. The JSON value is unchanged.

// UnescapeHTMLPolicy returns the per-call policy that undoes the HTML
// escapes encoding/json added to a transactional batch body.
func UnescapeHTMLPolicy() policy.Policy { return unescapeHTMLPolicy{} }

type unescapeHTMLPolicy struct{}

// Do rewrites a batch request's body, if it holds such escapes.
func (unescapeHTMLPolicy) Do(req *policy.Request) (*http.Response, error) {
	if req.Raw().Header.Get("x-ms-cosmos-is-batch-request") == "" || req.Body() == nil {
		return req.Next()
	}
	body, err := io.ReadAll(req.Body())
	if err != nil {
		return nil, err
	}
	if out, changed := unescapeHTML(body); changed {
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(out)), req.Raw().Header.Get("Content-Type")); err != nil {
			return nil, err
		}
	} else if err := req.RewindBody(); err != nil {
		return nil, err
	}
	return req.Next()
}

// unescapeHTML replaces the escapes \u003c, \u003e, \u0026, \u2028 and
// \u2029 in JSON text by the characters they stand for; every other
// escape is copied as it is (so "\\u003c", an escaped backslash followed
// by text, stays). changed reports whether anything was replaced.
func unescapeHTML(b []byte) (out []byte, changed bool) {
	i := bytes.IndexByte(b, '\\')
	if i < 0 {
		return b, false
	}
	out = make([]byte, 0, len(b))
	start := 0
	for ; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if r, ok := htmlEscape(b[i:]); ok {
			out = append(out, b[start:i]...)
			out = utf8.AppendRune(out, r)
			i += 5
			start = i + 1
			changed = true
			continue
		}
		i++ // skip the escaped character: "\\" must not start an escape
	}
	if !changed {
		return b, false
	}
	return append(out, b[start:]...), true
}

// htmlEscape reports whether b starts with one of the escapes
// encoding/json adds for HTML safety, and the rune it stands for.
func htmlEscape(b []byte) (rune, bool) {
	if len(b) < 6 || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	switch r {
	case '<', '>', '&', '\u2028', '\u2029':
		return r, true
	}
	return 0, false
}
