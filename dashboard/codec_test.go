package dashboard_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/duroxide-go/cdb/dashboard"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/payload"
)

// A dashboard over payload.WrapForDisplay shows decoded payloads with
// the codec, and the placeholder without it, never the ciphertext.
func TestDashboardDecodesThroughTheCodecItIsGiven(t *testing.T) {
	aes, err := payload.AESGCM(payload.Key{ID: "k1", Secret: bytes.Repeat([]byte{3}, 32)})
	must(t, err)
	store := memprovider.New()
	p, err := payload.Wrap(store, payload.Gzip(), aes)
	must(t, err)
	e := newEnvOn(t, p)
	e.run("secret-1", "Echo", "classified")

	page := func(codecs ...payload.Codec) string {
		t.Helper()
		view, err := payload.WrapForDisplay(store, codecs...)
		must(t, err)
		code, body := serve(t, dashboard.New(durable.NewClient(view), dashboard.Options{})).get("/instances/secret-1")
		if code != http.StatusOK {
			t.Fatalf("instance page: %d\n%s", code, body)
		}
		return body
	}
	// Echo also uses its input as a KV key, which is not a payload: the
	// checks look at the output, the custom status and the KV value.
	if body := page(payload.Gzip(), aes); !strings.Contains(body, `id="output">classified`) || !strings.Contains(body, `id="custom-status">classified`) {
		t.Errorf("with the codec the page must show the payload:\n%s", body)
	}
	body := page()
	if strings.Contains(body, `id="output">classified`) || strings.Contains(body, `id="custom-status">classified`) || strings.Contains(body, payload.Prefix) {
		t.Errorf("without the codec the page shows the payload or its envelope:\n%s", body)
	}
	if !strings.Contains(body, "&lt;encoded payload (gzip,aesgcm): codec not configured: set DUROXIDE_CODEC&gt;") {
		t.Errorf("without the codec the page must show the placeholder:\n%s", body)
	}
}
