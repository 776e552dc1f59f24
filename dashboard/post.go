package dashboard

import "net/http"

// maxForm bounds an action's form, so that a client cannot make the
// handler buffer a body of any size while parsing it.
const maxForm = 1 << 20

// acceptPost is the guard every action's POST passes before it is read: a
// read-only dashboard takes none, the body is bounded, and the form must
// carry this handler's token (the cross-origin check is the
// http.CrossOriginProtection around the mux). It answers w itself and
// returns false when r is refused.
func (h *handler) acceptPost(w http.ResponseWriter, r *http.Request) bool {
	if h.opts.ReadOnly {
		h.fail(w, errReadOnly)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		h.fail(w, badRequest("unreadable form"))
		return false
	}
	if !h.csrf.valid(r) {
		h.fail(w, errCSRF)
		return false
	}
	return true
}
