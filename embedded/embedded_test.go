package embedded

import (
	"bytes"
	"errors"
	"maps"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/localcosmos"
)

func echo(_ *durable.OrchestrationContext, in string) (string, error) { return "echo " + in, nil }

// An instance completed before Close is there, completed, after the next
// Open of the same directory.
func TestOpenKeepsInstancesInTheDataDirectory(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	st := open(t, &Options{DataDir: dir, Log: &bytes.Buffer{}})
	reg := durable.NewRegistry()
	if err := durable.RegisterOrchestration(reg, "Echo", echo); err != nil {
		t.Fatal(err)
	}
	rt, err := durable.Start(t.Context(), st.Provider, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := durable.NewClient(st.Provider)
	if err := c.StartOrchestration(t.Context(), "kept", "Echo", "me"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForOrchestration(t.Context(), "kept", durable.WaitOptions{Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = open(t, &Options{DataDir: dir, Log: &bytes.Buffer{}})
	defer st.Close()
	status, err := durable.NewClient(st.Provider).Status(t.Context(), "kept")
	if err != nil {
		t.Fatal(err)
	}
	out, err := durable.DecodeOutput[string](status)
	if err != nil || out != "echo me" {
		t.Fatalf("after reopening: output %q, %v; want \"echo me\"", out, err)
	}
}

func TestOpenRefusesADirectoryInUse(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	st := open(t, &Options{DataDir: dir, Log: &bytes.Buffer{}})
	defer st.Close()
	_, err := Open(t.Context(), &Options{DataDir: dir, Log: &bytes.Buffer{}})
	if !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("second Open = %v, want ErrDataDirInUse", err)
	}
	// The error says what to do about it.
	for _, want := range []string{dir, "stop the other process", "Options.JoinRunning", "the duroxide command does", EnvDataDir, "Options.DataDir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("second Open's error lacks %q: %v", want, err)
		}
	}
}

// Without DataDir or DUROXIDE_DATA_DIR the store is .duroxide/<Name> under
// the working directory, and Open says so.
func TestOpenDefaultsToDotDuroxideInTheWorkingDirectory(t *testing.T) {
	clearEnv(t)
	wd := t.TempDir()
	t.Chdir(wd)
	var log bytes.Buffer
	st := open(t, &Options{Name: "orders", Log: &log})
	defer st.Close()
	want := filepath.Join(wd, ".duroxide", "orders")
	if st.DataDir != want || !st.InProcess {
		t.Fatalf("DataDir = %q (in process %v), want %q", st.DataDir, st.InProcess, want)
	}
	if !strings.Contains(log.String(), want) {
		t.Errorf("startup line %q does not name %s", log.String(), want)
	}
	// Name defaults to "default".
	st2 := open(t, &Options{Log: &bytes.Buffer{}})
	defer st2.Close()
	if want := filepath.Join(wd, ".duroxide", "default"); st2.DataDir != want {
		t.Errorf("DataDir without a name = %q, want %q", st2.DataDir, want)
	}
}

func TestOpenDataDirVariableMovesTheStore(t *testing.T) {
	clearEnv(t)
	dir := filepath.Join(t.TempDir(), "moved")
	t.Setenv(EnvDataDir, dir)
	st := open(t, &Options{Name: "ignored", Log: &bytes.Buffer{}})
	defer st.Close()
	if st.DataDir != dir {
		t.Fatalf("DataDir = %q, want %q from %s", st.DataDir, dir, EnvDataDir)
	}
	explicit := t.TempDir()
	st2 := open(t, &Options{DataDir: explicit, Log: &bytes.Buffer{}})
	defer st2.Close()
	if st2.DataDir != explicit {
		t.Fatalf("Options.DataDir %q did not win over %s: %q", explicit, EnvDataDir, st2.DataDir)
	}
}

func TestOpenInMemoryWritesNothing(t *testing.T) {
	clearEnv(t)
	t.Chdir(t.TempDir())
	st := open(t, &Options{InMemory: true, Log: &bytes.Buffer{}})
	defer st.Close()
	if st.DataDir != "" || !st.InProcess {
		t.Fatalf("InMemory: DataDir %q, in process %v", st.DataDir, st.InProcess)
	}
	if matches, _ := filepath.Glob(".duroxide*"); len(matches) != 0 {
		t.Fatalf("InMemory wrote %v", matches)
	}
}

// Required, an account that the environment does not name fails Open at
// once and nothing is started or written; the in-process store otherwise
// says loudly what it is.
func TestOpenRequiresAnAccountWhenTold(t *testing.T) {
	for _, c := range []struct {
		name string
		env  string
		opts Options
	}{
		{name: "option", opts: Options{RequireAccount: true}},
		{name: "variable", env: "1"},
		{name: "variable true", env: "true"},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearEnv(t)
			t.Chdir(t.TempDir())
			t.Setenv(EnvRequireAccount, c.env)
			var log bytes.Buffer
			c.opts.Log = &log
			st, err := Open(t.Context(), &c.opts)
			if !errors.Is(err, ErrNoAccount) || st != nil {
				t.Fatalf("Open = %v, %v; want ErrNoAccount", st, err)
			}
			if matches, _ := filepath.Glob(".duroxide*"); len(matches) != 0 || log.Len() != 0 {
				t.Fatalf("a refused Open wrote %v, logged %q", matches, log.String())
			}
		})
	}
	t.Run("false", func(t *testing.T) {
		clearEnv(t)
		t.Setenv(EnvRequireAccount, "0")
		var log bytes.Buffer
		st := open(t, &Options{InMemory: true, Log: &log})
		defer st.Close()
		if !st.InProcess || !strings.Contains(log.String(), "WARNING: this store is local to this process") ||
			!strings.Contains(log.String(), EnvRequireAccount+"=1") {
			t.Fatalf("in process %v, log %q: want the in-process warning naming %s", st.InProcess, log.String(), EnvRequireAccount)
		}
	})
	t.Run("bad value", func(t *testing.T) {
		clearEnv(t)
		t.Setenv(EnvRequireAccount, "maybe")
		if _, err := Open(t.Context(), &Options{InMemory: true, Log: &bytes.Buffer{}}); !errors.Is(err, cdb.ErrConfig) || !strings.Contains(err.Error(), EnvRequireAccount) {
			t.Fatalf("Open = %v, want a configuration error naming %s", err, EnvRequireAccount)
		}
	})
	t.Run("account", func(t *testing.T) {
		clearEnv(t)
		srv := cosmostest.New(t, nil)
		t.Setenv(cdb.EnvEndpoint, srv.Endpoint())
		t.Setenv(cdb.EnvKey, srv.Key())
		t.Setenv(EnvRequireAccount, "1")
		var log bytes.Buffer
		st := open(t, &Options{Log: &log})
		defer st.Close()
		if st.InProcess || strings.Contains(log.String(), "WARNING") {
			t.Fatalf("in process %v, log %q: want the account, no warning", st.InProcess, log.String())
		}
	})
}

func TestOpenRefusesANameThatIsAPath(t *testing.T) {
	clearEnv(t)
	for _, name := range []string{"../x", "a/b", "..", "."} {
		if _, err := Open(t.Context(), &Options{Name: name, Log: &bytes.Buffer{}}); !errors.Is(err, ErrName) {
			t.Errorf("Name %q: %v, want ErrName", name, err)
		}
	}
}

// With COSMOS_ENDPOINT set Open uses that account (a cosmostest server
// standing in for one) and starts no store of its own.
func TestOpenUsesTheAccountTheEnvironmentNames(t *testing.T) {
	clearEnv(t)
	wd := t.TempDir()
	t.Chdir(wd)
	srv := cosmostest.New(t, nil)
	t.Setenv(cdb.EnvEndpoint, srv.Endpoint())
	t.Setenv(cdb.EnvKey, srv.Key())
	t.Setenv(cdb.EnvContainer, "mine")
	var log bytes.Buffer
	st := open(t, &Options{Log: &log})
	defer st.Close()
	if st.InProcess || st.DataDir != "" || st.ContainerName() != "duroxide/mine" {
		t.Fatalf("in process %v, DataDir %q, container %s", st.InProcess, st.DataDir, st.ContainerName())
	}
	if !strings.Contains(log.String(), srv.Endpoint()+", auth: key") {
		t.Errorf("startup line %q does not name the account", log.String())
	}
	if matches, _ := filepath.Glob(".duroxide*"); len(matches) != 0 {
		t.Fatalf("with an account Open wrote %v", matches)
	}
	c, err := srv.Client().NewContainer("duroxide", "mine")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(t.Context(), nil); err != nil {
		t.Fatalf("Open did not bootstrap the account's container: %v", err)
	}
}

func TestOpenReportsABadAccountConfiguration(t *testing.T) {
	clearEnv(t)
	t.Setenv(cdb.EnvConnectionString, "AccountEndpoint=https://example.documents.azure.com:443/;")
	_, err := Open(t.Context(), &Options{Log: &bytes.Buffer{}})
	if !errors.Is(err, cdb.ErrConfig) {
		t.Fatalf("Open = %v, want cdb.ErrConfig", err)
	}
}

// COSMOS_ENDPOINT set to the portal's connection string (a common
// mistake), with or without COSMOS_KEY, is a configuration error that
// says so and carries the key nowhere: not in the error, not in the log.
func TestOpenNeverEchoesAConnectionStringGivenAsTheEndpoint(t *testing.T) {
	srv := cosmostest.New(t, nil)
	connStr := "AccountEndpoint=" + srv.Endpoint() + ";AccountKey=" + srv.Key() + ";"
	for _, key := range []string{srv.Key(), ""} {
		clearEnv(t)
		t.Setenv(cdb.EnvEndpoint, connStr)
		t.Setenv(cdb.EnvKey, key)
		var log bytes.Buffer
		st, err := Open(t.Context(), &Options{Log: &log})
		if err == nil {
			st.Close()
			t.Fatalf("COSMOS_KEY %q: Open accepted a connection string as the endpoint", key)
		}
		if !errors.Is(err, cdb.ErrConfig) || !strings.Contains(err.Error(), cdb.EnvConnectionString) {
			t.Errorf("COSMOS_KEY %q: Open = %v, want cdb.ErrConfig naming %s", key, err, cdb.EnvConnectionString)
		}
		for _, out := range []string{err.Error(), log.String()} {
			if strings.Contains(out, srv.Key()) || strings.Contains(out, srv.Key()[:16]) {
				t.Fatalf("COSMOS_KEY %q: the account key reached %q", key, out)
			}
		}
	}
}

// The in-process store's discovery reads pages of InProcessDiscoveryPageSize
// queue entries unless the caller's provider options say otherwise.
func TestOpenInProcessReadsLargerDiscoveryPages(t *testing.T) {
	clearEnv(t)
	for _, tc := range []struct {
		opts *cdb.Options
		want string
	}{
		{nil, strconv.Itoa(InProcessDiscoveryPageSize)},
		{&cdb.Options{DiscoveryPageSize: 7}, "7"},
	} {
		w := &queryWatch{sizes: map[string]bool{}}
		watchServer(t, w)
		st := open(t, &Options{DataDir: t.TempDir(), Log: &bytes.Buffer{}, Provider: tc.opts})
		w.on.Store(true)
		_, err := st.Provider.FetchWorkItem(t.Context(), time.Second, 0, nil, duroxide.DefaultOnly())
		w.on.Store(false)
		sizes := w.seen()
		if err != nil {
			t.Fatal(err)
		}
		if !sizes[tc.want] {
			t.Errorf("provider options %+v: discovery page sizes %v, want %s", tc.opts, sizes, tc.want)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// queryWatch is a localcosmos.Interceptor that records, while on, the page
// sizes (x-ms-max-item-count) of cross-partition queries, and disturbs
// nothing.
type queryWatch struct {
	on    atomic.Bool
	mu    sync.Mutex
	sizes map[string]bool
}

// Intercept implements localcosmos.Interceptor.
func (w *queryWatch) Intercept(op localcosmos.Op, r *http.Request) localcosmos.Interception {
	if w.on.Load() && op == localcosmos.OpQuery && r.Header.Get("x-ms-documentdb-partitionkey") == "" { // discovery is cross-partition
		w.mu.Lock()
		w.sizes[r.Header.Get("x-ms-max-item-count")] = true
		w.mu.Unlock()
	}
	return localcosmos.Interception{}
}

func (w *queryWatch) seen() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.sizes)
}

// watchServer makes the in-process servers Open starts until t ends (or
// the next watchServer) report their requests to ic. Tests that call it
// run serially (they set the environment), so no other test starts a
// server meanwhile.
func watchServer(t *testing.T, ic localcosmos.Interceptor) {
	prev := newLocalServer
	newLocalServer = func(o *localcosmos.Options) (*localcosmos.Server, error) {
		o.Intercept = ic
		return localcosmos.NewServer(o)
	}
	t.Cleanup(func() { newLocalServer = prev })
}
