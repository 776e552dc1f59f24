package localcosmos

import (
	"errors"
	"net/http"
	"strings"
	"sync"
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
	drops := &dropper{}
	s, err := NewServer(&Options{DataDir: t.TempDir(), Intercept: drops})
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

	remove := drops.arm(OpCreateItem, Interception{Drop: true, AfterApply: true})
	_, err = f.ct.CreateItem(testCtx(t), pkOf("i1"), item("b", "i1"), nil)
	remove()
	if !errors.Is(err, errConnectionDropped) {
		t.Fatalf("create with the connection dropped after apply: %v, want %v", err, errConnectionDropped)
	}
	f.read(t, "b", "i1") // applied
	remove = drops.arm(OpCreateItem, Interception{Drop: true})
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

// dropper is an Interceptor that disturbs the next request of one
// operation, as cosmostest's faults do with Times: 1.
type dropper struct {
	mu sync.Mutex
	op Op
	ic *Interception
}

// arm makes the next request of op get ic; remove disarms it.
func (d *dropper) arm(op Op, ic Interception) (remove func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.op, d.ic = op, &ic
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.ic = nil
	}
}

// Intercept implements Interceptor.
func (d *dropper) Intercept(op Op, _ *http.Request) Interception {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ic == nil || op != d.op {
		return Interception{}
	}
	ic := *d.ic
	d.ic = nil
	return ic
}
