package cosmostest

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestInProcessTransport serves a client through InProcessTransport:
// requests are answered as over the socket, a dropped connection is a
// transport error (with the write applied or not, as the fault says), and
// after Close requests fail instead of reaching a closed store.
func TestInProcessTransport(t *testing.T) {
	t.Parallel()
	s, err := NewServer(&Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opts := noRetryOptions()
	opts.Transport = &http.Client{Transport: s.InProcessTransport()}
	c, err := s.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := &fixture{s: s, c: c}
	f.db, f.ct = f.setup(t, c)

	f.create(t, "a", "i1", "v", 1)
	if got := f.read(t, "a", "i1"); got["v"] != float64(1) {
		t.Fatalf("read a: %v", got)
	}
	_, err = f.ct.ReadItem(testCtx(t), pkOf("i1"), "missing", nil)
	wantStatus(t, err, http.StatusNotFound, "read missing")

	remove := s.InjectFault(Fault{Op: OpCreateItem, Drop: DropAfterApply, Times: 1})
	_, err = f.ct.CreateItem(testCtx(t), pkOf("i1"), item("b", "i1"), nil)
	remove()
	if !errors.Is(err, errConnectionDropped) {
		t.Fatalf("create with the connection dropped after apply: %v, want %v", err, errConnectionDropped)
	}
	f.read(t, "b", "i1") // applied
	remove = s.InjectFault(Fault{Op: OpCreateItem, Drop: DropBeforeApply, Times: 1})
	_, err = f.ct.CreateItem(testCtx(t), pkOf("i1"), item("c", "i1"), nil)
	remove()
	if !errors.Is(err, errConnectionDropped) {
		t.Fatalf("create with the connection dropped before apply: %v, want %v", err, errConnectionDropped)
	}
	_, err = f.ct.ReadItem(testCtx(t), pkOf("i1"), "c", nil)
	wantStatus(t, err, http.StatusNotFound, "read c (dropped before apply)")

	s.Close()
	_, err = f.ct.CreateItem(testCtx(t), pkOf("i1"), item("d", "i1"), &azcosmos.ItemOptions{})
	if !errors.Is(err, errTransportClosed) {
		t.Fatalf("create after Close: %v, want %v", err, errTransportClosed)
	}
}

// TestInProcessTransportRefusesUnsendableHeaders: a header value no
// socket can carry (a tampered continuation token with CR, LF or NUL)
// fails in process as it fails over the socket, before the handler: the
// SDK reports a transport error, not a response.
func TestInProcessTransportRefusesUnsendableHeaders(t *testing.T) {
	t.Parallel()
	s, err := NewServer(&Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	inproc := noRetryOptions()
	inproc.Transport = &http.Client{Transport: s.InProcessTransport()}
	for i, opts := range []*azcosmos.ClientOptions{noRetryOptions(), inproc} {
		name := []string{"socket", "in process"}[i]
		c, err := s.NewClient(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if i == 0 {
			(&fixture{s: s, c: c}).setup(t, c)
		}
		ct, err := c.NewContainer(testDB, testColl)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"a\rb", "a\nb", "a\x00b"} {
			_, err := ct.NewQueryItemsPager("SELECT * FROM c", pkOf("i1"), &azcosmos.QueryOptions{ContinuationToken: &bad}).NextPage(testCtx(t))
			var re *azcore.ResponseError
			if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "invalid header field value") {
				t.Fatalf("%s: query from continuation %q: %v, want the transport's refusal", name, bad, err)
			}
		}
	}
}
