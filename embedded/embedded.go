package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/localcosmos"
	"github.com/duroxide-go/cdb/payload/filestore"
)

// EnvDataDir names the variable that moves the in-process store's data
// directory when [Options].DataDir is empty.
const EnvDataDir = "DUROXIDE_DATA_DIR"

// EnvRequireAccount names the variable that, set to a true value ("1",
// "true"), makes Open refuse to start without an account, as
// [Options].RequireAccount does: set it in every deployment, so that a
// pod whose COSMOS_ENDPOINT went missing fails at startup instead of
// running on a pod-local store that a restart loses.
const EnvRequireAccount = "DUROXIDE_REQUIRE_ACCOUNT"

// DefaultDir is the directory, under the working directory, that holds the
// in-process stores: .duroxide/<Name>.
const DefaultDir = ".duroxide"

// InProcessDiscoveryPageSize is the in-process store's default
// cdb.Options.DiscoveryPageSize: how many queue entries a fetch reads when
// looking for work. Reading them costs no round trips to a remote service
// here (the server indexes queue documents by type), and a page that holds
// the whole queue lets every fetch take the oldest entries, where a full
// page of the default 50 makes discovery rotate over slot windows and
// serve queued work out of order (in bench/peers' default workload, with
// about 100 queued activities, 95th-percentile latency fell by a third).
const InProcessDiscoveryPageSize = 200

// PayloadsDir is the directory, under the data directory, that
// Store.Payloads keeps large payloads in.
const PayloadsDir = "payloads"

// DefaultName is the store name used when [Options].Name is empty.
const DefaultName = "default"

// ErrDataDirInUse is matched (errors.Is) by Open's error when another
// process (or another Open in this one) has the data directory open. The
// error names the directory and the remedies: stop the other process (a
// running service holds its store while it runs, so the CLI cannot open
// it meanwhile), or set DUROXIDE_DATA_DIR or Options.DataDir to another
// directory.
var ErrDataDirInUse = localcosmos.ErrDataDirInUse

// ErrNoAccount is matched (errors.Is) by Open's error when an account is
// required ([Options].RequireAccount or DUROXIDE_REQUIRE_ACCOUNT) and the
// environment names none.
var ErrNoAccount = errors.New("embedded: an account is required and none is configured (set COSMOS_ENDPOINT or COSMOS_CONNECTION_STRING)")

// ErrName is matched (errors.Is) by Open's error when [Options].Name is
// not a plain directory name.
var ErrName = errors.New("embedded: name must be a plain directory name")

// Options configure [Open]. The zero value (or nil) is ready to use.
type Options struct {
	// Name picks the default data directory, .duroxide/<Name> under the
	// working directory, so that several programs in one directory keep
	// separate stores. Defaults to "default".
	Name string
	// DataDir, if set, is the in-process store's directory (created if
	// missing), overriding DUROXIDE_DATA_DIR and the default.
	DataDir string
	// InMemory keeps the in-process store in memory only: nothing is
	// written and everything is lost when the store closes.
	InMemory bool
	// Provider is passed to cdb.New; nil means its defaults, except that
	// the in-process store's DiscoveryPageSize defaults to
	// InProcessDiscoveryPageSize and the in-process store is always
	// Exclusive (cdb.Options.Exclusive).
	Provider *cdb.Options
	// JoinRunning, when another process has the data directory open,
	// connects to the store that process serves (its endpoint file, see
	// EndpointFile) instead of failing with ErrDataDirInUse: the CLI and
	// `duroxide ui` look at a running service's store this way. The
	// joined store is as live as an account: the owner keeps running its
	// runtime, and whatever this process writes the owner sees at once.
	// It serves clients only (cdb.Options.ClientOnly): durable.Start
	// refuses it with cdb.ErrClientOnly, since the owner releases every
	// lock when it restarts.
	JoinRunning bool
	// RequireAccount makes Open fail with ErrNoAccount, starting nothing,
	// when the environment names no account; DUROXIDE_REQUIRE_ACCOUNT
	// does the same from the deployment's side.
	RequireAccount bool
	// Payloads configures Store.Payloads, the codec keeping large
	// payloads in the data directory; nil means filestore's defaults.
	Payloads *filestore.Options
	// Log receives the line saying which account or directory Open uses.
	// Defaults to standard error; io.Discard silences it.
	Log io.Writer
}

// Store is an open provider and, without an account, the in-process
// server behind it.
type Store struct {
	// Provider is the duroxide provider to start a runtime or client on.
	Provider *cdb.Provider
	// Config is the configuration Provider was made with.
	Config cdb.Config
	// Description says where Provider points and how it authenticates.
	Description string
	// InProcess is true when Provider points at an in-process server.
	InProcess bool
	// Shared is true when Provider points at the in-process server of
	// another process that has the data directory open
	// (Options.JoinRunning).
	Shared bool
	// DataDir is the absolute path of the in-process store's directory;
	// empty for an account or with InMemory.
	DataDir string
	// Payloads keeps payloads over its threshold in files under
	// <DataDir>/payloads (payload/filestore), for payload.Wrap: the
	// embedded store's counterpart of payload/blobstore, which an account
	// needs instead. Nil for an account, a joined store and InMemory. Open
	// does not apply it; nothing is written until a wrapper encodes with it.
	Payloads *filestore.Codec

	server    *localcosmos.Server
	closeOnce sync.Once
	closeErr  error
}

// Open connects to the account the environment names, or starts the
// in-process store (see the package documentation), and returns it with
// its database and container bootstrapped. Close releases it.
func Open(ctx context.Context, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	require, err := accountRequired(o)
	if err != nil {
		return nil, err
	}
	var st *Store
	switch {
	case os.Getenv(cdb.EnvEndpoint) != "" || os.Getenv(cdb.EnvConnectionString) != "":
		st, err = openAccount()
	case require:
		return nil, ErrNoAccount
	default:
		st, err = openInProcess(o)
	}
	if err != nil {
		return nil, err
	}
	popts := o.Provider
	if st.InProcess {
		var po cdb.Options
		if popts != nil {
			po = *popts
		}
		if po.DiscoveryPageSize == 0 {
			po.DiscoveryPageSize = InProcessDiscoveryPageSize
		}
		// The data directory's lock makes this process the store's only
		// user, and proves every earlier one dead: their locks are
		// released at once (interrupted work resumes within moments of a
		// restart, not after its lock timeout and the clock-skew margin).
		po.Exclusive = true
		popts = &po
	}
	if st.Shared {
		// The owner is Exclusive: when it restarts it releases every
		// lock, so work this process locked would run twice. Clients only.
		var po cdb.Options
		if popts != nil {
			po = *popts
		}
		po.ClientOnly = true
		popts = &po
	}
	p, err := cdb.New(ctx, st.Config, popts)
	if err != nil {
		st.closeServer()
		return nil, fmt.Errorf("embedded: connecting to %s: %w", st.Description, err)
	}
	st.Provider = p
	fmt.Fprintf(o.Log, "duroxide store: %s\n", st.Description)
	if st.InProcess {
		// Loud on purpose: the same binary deployed without its account
		// variables would otherwise run on a store no other process sees.
		fmt.Fprintf(o.Log, "duroxide store: WARNING: this store is local to this process and machine, not for production; "+
			"set %s=1 to refuse to start without an account\n", EnvRequireAccount)
	}
	return st, nil
}

// accountRequired reports whether Open must find an account:
// Options.RequireAccount or a true DUROXIDE_REQUIRE_ACCOUNT.
func accountRequired(o Options) (bool, error) {
	v := os.Getenv(EnvRequireAccount)
	if o.RequireAccount || v == "" {
		return o.RequireAccount, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w: %s=%q is neither true nor false", cdb.ErrConfig, EnvRequireAccount, v)
	}
	return b, nil
}

// openAccount describes the account cdb.ConfigFromEnv configures.
func openAccount() (*Store, error) {
	cfg, err := cdb.ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	auth := "key"
	switch {
	case cfg.ConnectionString != "":
		auth = "connection string"
	case cfg.Credential != nil:
		auth = "DefaultAzureCredential (no COSMOS_KEY)"
	}
	where := cdb.SafeEndpoint(cfg.Endpoint)
	if where == "" {
		where = "COSMOS_CONNECTION_STRING's account"
	}
	return &Store{Config: cfg, Description: where + ", auth: " + auth}, nil
}

// newLocalServer starts the in-process server: localcosmos.NewServer,
// in a variable so that the package's tests can watch its requests
// (Options.Intercept).
var newLocalServer = localcosmos.NewServer

// openInProcess starts the local server on the resolved data directory.
func openInProcess(o Options) (*Store, error) {
	dir, err := dataDir(o)
	if err != nil {
		return nil, err
	}
	var payloads *filestore.Codec
	if dir != "" {
		// The server ignores names it did not write, so the payloads'
		// directory can live beside its log and snapshots.
		if payloads, err = filestore.New(filepath.Join(dir, PayloadsDir), o.Payloads); err != nil {
			return nil, fmt.Errorf("embedded: %w", err)
		}
	}
	key := newKey()
	srv, err := newLocalServer(&localcosmos.Options{DataDir: dir, Key: key})
	if errors.Is(err, ErrDataDirInUse) && o.JoinRunning {
		return joinRunning(dir)
	}
	if errors.Is(err, ErrDataDirInUse) {
		return nil, fmt.Errorf("embedded: starting the in-process store: %w; only one process may open it at a time: "+
			"stop the other process using it, open it with Options.JoinRunning to use the store that process serves "+
			"(the duroxide command does), or set %s (Options.DataDir) to another directory", err, EnvDataDir)
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: starting the in-process store: %w", err)
	}
	if dir != "" {
		if err := writeEndpoint(dir, srv.Endpoint(), key); err != nil {
			srv.Close()
			return nil, err
		}
	}
	where := "in memory (nothing kept)"
	if dir != "" {
		where = "in " + dir + " (set " + EnvDataDir + " to move it)"
	}
	cfg := cdb.Config{
		Endpoint:  srv.Endpoint(),
		Key:       srv.Key(),
		Database:  os.Getenv(cdb.EnvDatabase),
		Container: os.Getenv(cdb.EnvContainer),
		// The provider calls the server in process, without the loopback
		// socket (localcosmos.Server.InProcessTransport); Endpoint still
		// serves other clients.
		ClientOptions: &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
			Transport: &http.Client{Transport: srv.InProcessTransport()},
		}},
	}
	return &Store{
		Config:      cfg,
		Description: "in-process cosmostest " + where + "; set COSMOS_ENDPOINT to use an account",
		InProcess:   true,
		DataDir:     dir,
		Payloads:    payloads,
		server:      srv,
	}, nil
}

// dataDir resolves the in-process store's directory to an absolute path;
// empty for InMemory.
func dataDir(o Options) (string, error) {
	if o.InMemory {
		return "", nil
	}
	dir := o.DataDir
	if dir == "" {
		dir = os.Getenv(EnvDataDir)
	}
	if dir == "" {
		name := o.Name
		if name == "" {
			name = DefaultName
		}
		if name != filepath.Base(name) || name == "." || name == ".." || !filepath.IsLocal(name) {
			return "", fmt.Errorf("%w: %q", ErrName, name)
		}
		dir = filepath.Join(DefaultDir, name)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("embedded: data directory %q: %w", dir, err)
	}
	return abs, nil
}

// ContainerName returns "database/container" with the defaults applied.
func (s *Store) ContainerName() string {
	return or(s.Config.Database, cdb.DefaultDatabase) + "/" + or(s.Config.Container, cdb.DefaultContainer)
}

// Close closes the provider, then the in-process server (releasing its
// data directory), if any. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.Provider != nil {
			s.closeErr = s.Provider.Close()
		}
		s.closeServer()
	})
	return s.closeErr
}

func (s *Store) closeServer() {
	if s.server != nil {
		if s.DataDir != "" {
			removeEndpoint(s.DataDir, s.server.Key())
		}
		s.server.Close()
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
