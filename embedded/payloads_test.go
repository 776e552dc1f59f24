package embedded

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/duroxide-go/cdb/payload"
	"github.com/duroxide-go/cdb/payload/filestore"
)

// A large payload encoded with Store.Payloads is a file in the data
// directory, and decodes after the store is closed and opened again.
func TestPayloadsLiveInTheDataDirectory(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	st := open(t, &Options{DataDir: dir, Log: &bytes.Buffer{}, Payloads: &filestore.Options{Threshold: 16}})
	if st.Payloads == nil || st.Payloads.Dir() != filepath.Join(dir, PayloadsDir) {
		t.Fatalf("Payloads = %v, want a codec on %s", st.Payloads, filepath.Join(dir, PayloadsDir))
	}
	s := payload.Scope{Instance: "big", ExecutionID: 1}
	data := bytes.Repeat([]byte("p"), 1000)
	enc, err := st.Payloads.Encode(t.Context(), s, data)
	must(t, err)
	if len(enc) >= len(data) {
		t.Fatalf("a payload over the threshold was kept inline (%d bytes)", len(enc))
	}
	must(t, st.Close())
	st = open(t, &Options{DataDir: dir, Log: &bytes.Buffer{}})
	defer st.Close()
	got, err := st.Payloads.Decode(t.Context(), s, enc)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Decode after reopening = %d bytes, %v", len(got), err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, PayloadsDir)); len(entries) != 1 {
		t.Fatalf("payloads directory holds %d entries, want 1 instance", len(entries))
	}
}

func TestPayloadsNeedADirectory(t *testing.T) {
	clearEnv(t)
	st := open(t, &Options{InMemory: true, Log: &bytes.Buffer{}})
	defer st.Close()
	if st.Payloads != nil {
		t.Fatal("an in-memory store has a payloads directory")
	}
	_, err := Open(t.Context(), &Options{DataDir: t.TempDir(), Log: &bytes.Buffer{}, Payloads: &filestore.Options{Threshold: -1}})
	if !errors.Is(err, payload.ErrInvalidCodec) {
		t.Fatalf("Open with a negative threshold = %v, want payload.ErrInvalidCodec", err)
	}
}
