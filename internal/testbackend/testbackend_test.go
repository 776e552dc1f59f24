package testbackend

import (
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// validName is what every backend accepts as a database or container id.
var validName = regexp.MustCompile(`^[a-z0-9-]{1,255}$`)

func TestNewDatabaseName(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		n := NewDatabaseName(t)
		if !strings.HasPrefix(n, DatabasePrefix) || !validName.MatchString(n) {
			t.Fatalf("NewDatabaseName: %q is not a prefixed, valid name", n)
		}
		if seen[n] {
			t.Fatalf("NewDatabaseName: %q returned twice", n)
		}
		seen[n] = true
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"TestX/sub_case#1":      "testx-sub-case-1",
		"//":                    "",
		"ÄÖ ok":                 "ok",
		strings.Repeat("a", 99): strings.Repeat("a", 40),
	} {
		if got := sanitize(in, 40); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSelected(t *testing.T) {
	t.Setenv(EnvBackends, "")
	if !selected(NameVercel) {
		t.Error("empty CDB_BACKENDS should select every backend")
	}
	t.Setenv(EnvBackends, " cosmostest , cosmos")
	if !selected(NameCosmostest) || !selected(NameCosmos) || selected(NameVercel) {
		t.Error("CDB_BACKENDS=cosmostest,cosmos selected the wrong backends")
	}
}

func TestSkip(t *testing.T) {
	b := Backend{Name: "x", Gaps: map[string]string{"g": "because"}}
	t.Run("gap", func(t *testing.T) {
		b.Skip(t, "g")
		t.Fatal("Skip returned for a known gap")
	})
	t.Run("no-gap", func(t *testing.T) {
		b.Skip(t, "other")
		if t.Skipped() {
			t.Fatal("Skip skipped for an unknown gap")
		}
	})
	if !b.HasGap("g") || b.HasGap("other") {
		t.Error("HasGap disagrees with Gaps")
	}
}

func TestClientOptions(t *testing.T) {
	if o := (Backend{}).ClientOptions(); o.Retry.MaxRetries != -1 {
		t.Errorf("fake backend: MaxRetries %d, want -1 (no retries)", o.Retry.MaxRetries)
	}
	o := (Backend{Real: true}).ClientOptions()
	if len(o.Retry.StatusCodes) != 1 || o.Retry.StatusCodes[0] != http.StatusTooManyRequests {
		t.Errorf("real backend: retried statuses %v, want only 429", o.Retry.StatusCodes)
	}
}

// TestBackends checks, on every selected backend, that a container can be
// created and used and that its database is deleted when the test ends.
func TestBackends(t *testing.T) {
	ForEach(t, func(t *testing.T, b Backend) {
		if b.Client == nil || b.Endpoint == "" || b.Key == "" || b.Gaps == nil {
			t.Fatalf("incomplete backend %+v", b)
		}
		var db *azcosmos.DatabaseClient
		t.Run("use", func(t *testing.T) {
			db = b.NewDatabase(t)
			props := azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}
			if _, err := db.CreateContainer(t.Context(), props, nil); err != nil {
				t.Fatalf("create container: %v", err)
			}
			c, err := db.NewContainer("c")
			if err != nil {
				t.Fatal(err)
			}
			item := []byte(`{"id":"a","pk":"p"}`)
			if _, err := c.CreateItem(t.Context(), azcosmos.NewPartitionKeyString("p"), item, nil); err != nil {
				t.Fatalf("create item: %v", err)
			}
		})
		if db == nil {
			t.FailNow()
		}
		_, err := db.Read(t.Context(), nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound {
			t.Fatalf("database %s after its test ended: err %v, want 404", db.ID(), err)
		}
	})
}

// names lists the backends' names.
func names(bs []Backend) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Name
	}
	return out
}

func TestPersistentBackendSelection(t *testing.T) {
	t.Setenv(EnvBackends, "")
	if got := names(All(t)); !slices.Contains(got, NameCosmostestPersistent) {
		t.Errorf("All = %v, want it to include %s", got, NameCosmostestPersistent)
	}
	// The provider suites run on it by default too: it is the embedded
	// store's configuration (embedded.Open).
	if got := names(AllProviders(t)); !slices.Contains(got, NameCosmostestPersistent) {
		t.Errorf("AllProviders = %v, want it to include %s", got, NameCosmostestPersistent)
	}
	t.Setenv(EnvBackends, NameCosmostestPersistent)
	if got := names(AllProviders(t)); !slices.Equal(got, []string{NameCosmostestPersistent}) {
		t.Errorf("AllProviders with CDB_BACKENDS=%s = %v", NameCosmostestPersistent, got)
	}
	b := All(t)[0]
	if _, err := b.Client.CreateDatabase(t.Context(), azcosmos.DatabaseProperties{ID: "x"}, nil); err != nil {
		t.Fatal(err)
	}
}
