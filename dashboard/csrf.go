package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
)

// csrfCookie names the cookie a form token is bound to.
const csrfCookie = "duroxide_csrf"

// csrfGuard issues and checks form tokens: a token is the HMAC, under a
// key only this handler knows, of a random cookie value. A cross-site page
// can make the browser send the cookie but can read neither the cookie
// nor a page holding the token, so it cannot forge the form field.
type csrfGuard struct {
	key  []byte
	path string
}

// token returns the form token for r, setting the cookie on w first if r
// has none.
func (g *csrfGuard) token(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && c.Value != "" {
		return g.sign(c.Value)
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{
		Name: csrfCookie, Value: v, Path: g.path, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
	return g.sign(v)
}

// valid reports whether r's form token matches its cookie.
func (g *csrfGuard) valid(r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" {
		return false
	}
	return hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(g.sign(c.Value)))
}

func (g *csrfGuard) sign(v string) string {
	m := hmac.New(sha256.New, g.key)
	m.Write([]byte(v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
