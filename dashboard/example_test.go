package dashboard_test

import (
	"crypto/subtle"
	"log"
	"net/http"
	"os"

	"github.com/duroxide-go/cdb/dashboard"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/memprovider"
)

// The dashboard has no authentication of its own: the host wraps it in
// its own. Here, HTTP basic auth with one operator account, and a second,
// read-only mount for everyone else the host lets in.
func ExampleNew() {
	client := durable.NewClient(memprovider.New()) // your service's client

	mux := http.NewServeMux()
	mux.Handle("/ops/", requireOperator(dashboard.New(client, dashboard.Options{BasePath: "/ops"})))
	mux.Handle("/status/", dashboard.New(client, dashboard.Options{BasePath: "/status", ReadOnly: true}))

	if os.Getenv("SERVE_EXAMPLE") != "" {
		log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
	}
	// Output:
}

// requireOperator lets a request through only with the operator's
// credentials. Use your real identity provider (OIDC, mTLS, a reverse
// proxy's headers) in production.
func requireOperator(next http.Handler) http.Handler {
	user, pass := os.Getenv("OPS_USER"), os.Getenv("OPS_PASSWORD")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || user == "" || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(pass)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="duroxide"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
