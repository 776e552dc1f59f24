package apisurface_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyBlobstoreLinksAzblob: azblob (and Apache Arrow, which its
// container client brings) is linked only by programs that import
// payload/blobstore, as the README says.
func TestOnlyBlobstoreLinksAzblob(t *testing.T) {
	const azblob = "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		checked++
		if strings.HasPrefix(pkg, azblob) {
			continue
		}
		links := strings.Contains(" "+deps, " "+azblob)
		uses := strings.Contains(" "+deps+" ", " github.com/duroxide-go/cdb/payload/blobstore ") || pkg == "github.com/duroxide-go/cdb/payload/blobstore"
		if links && !uses {
			t.Errorf("%s links azblob without importing payload/blobstore", pkg)
		}
		if pkg == "github.com/duroxide-go/cdb/payload/blobstore" && !links {
			t.Errorf("payload/blobstore does not link azblob: the check checks nothing")
		}
	}
	if checked < 20 {
		t.Fatalf("go list listed %d packages", checked)
	}
}
