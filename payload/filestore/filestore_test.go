package filestore_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/duroxide-go/cdb/internal/leaktest"
	"github.com/duroxide-go/cdb/payload"
	"github.com/duroxide-go/cdb/payload/filestore"
	"github.com/duroxide-go/cdb/payload/internal/claimchecktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

func TestFileStore(t *testing.T) {
	dir := t.TempDir()
	claimchecktest.Run(t, claimchecktest.Backend{
		New: func(t *testing.T, threshold int) claimchecktest.Codec {
			c, err := filestore.New(dir, &filestore.Options{Threshold: threshold})
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		Objects: func(t *testing.T) []string {
			var names []string
			err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(dir, p)
				names = append(names, filepath.ToSlash(rel))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return names
		},
		Overwrite: func(t *testing.T, name string, data []byte) {
			if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), data, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	})
}

func TestFileStoreRefusesBadOptions(t *testing.T) {
	if _, err := filestore.New("", nil); !errors.Is(err, payload.ErrInvalidCodec) {
		t.Fatal("an empty directory was accepted")
	}
	if _, err := filestore.New(t.TempDir(), &filestore.Options{Threshold: -1}); !errors.Is(err, payload.ErrInvalidCodec) {
		t.Fatal("a negative threshold was accepted")
	}
}
