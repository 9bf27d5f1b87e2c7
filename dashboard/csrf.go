package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
)

// The dashboard's actions are POSTs with two guards against cross-site
// requests. http.CrossOriginProtection refuses a browser's cross-origin
// POST (Sec-Fetch-Site, else Origin against Host). And each form carries a
// token: the HMAC, under a key made at New, of a random value kept in an
// HttpOnly, SameSite=Strict cookie; a POST whose form token does not match
// its cookie is refused with 403. Another site can neither read the cookie
// nor make the token.

// csrfCookie names the cookie that holds a browser's random value.
const csrfCookie = "conveyor_csrf"

// csrfField names the form field that holds the token.
const csrfField = "csrf"

// csrf makes and checks the forms' tokens.
type csrf struct {
	key  []byte // made at New, so tokens end with the process
	path string // the cookie's Path: the dashboard's prefix and a slash
}

// token returns the token of r's forms, setting the cookie on w when r
// has none (or one this dashboard could not have set).
func (c *csrf) token(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) == 43 {
		return c.sign(ck.Value)
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics instead)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: v, Path: c.path, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return c.sign(v)
}

// valid reports whether r, a POST with its form parsed, carries the token
// of its cookie.
func (c *csrf) valid(r *http.Request) bool {
	ck, err := r.Cookie(csrfCookie)
	if err != nil || ck.Value == "" {
		return false
	}
	got := r.PostFormValue(csrfField)
	return got != "" && hmac.Equal([]byte(got), []byte(c.sign(ck.Value)))
}

func (c *csrf) sign(v string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
