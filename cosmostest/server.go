package cosmostest

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/duroxide-go/cdb/localcosmos"
)

// Options configure a [Server]. The zero value (or nil) is ready to use.
// All but Lag are those of the server core ([localcosmos.Options]).
type Options struct {
	// Key is the account master key, base64-encoded. Defaults to [EmulatorKey].
	Key string
	// Auth selects the accepted authorization. Defaults to [AuthKey].
	Auth AuthMode
	// Logf, if set, receives one line per request (method, path, operation,
	// status). testing.T.Logf fits.
	Logf func(format string, args ...any)
	// Region is the region name the account advertises. Defaults to
	// "South Central US", as the emulator does.
	Region string
	// Addr is the TCP address to listen on. Defaults to "127.0.0.1:0" (a
	// free loopback port); a fixed port lets other processes share the
	// server (see cmd/cosmostest).
	Addr string
	// ConsistencyLevel is the account's default consistency level:
	// "Strong", "BoundedStaleness", "Session", "ConsistentPrefix" or
	// "Eventual". Requests may ask for a weaker level only (400 otherwise,
	// as on the service). It changes nothing else: the server always reads
	// the latest write. Defaults to "Session", the service's default.
	ConsistencyLevel string
	// Lag, if set, turns on the lagging-replica mode (lag.go): a read or
	// query without a session token covering a logical partition's latest
	// writes may be served from an older version of that partition, as a
	// lagging replica of the service would serve it. Writes and their ETag
	// checks always see the latest version.
	Lag *LagOptions
	// PartitionKeyRanges is how many physical partitions (partition key
	// ranges) every container has; cross-partition queries are served one
	// range per page, with empty pages for empty ranges, as the gateway
	// does. Defaults to 1; at most 256.
	PartitionKeyRanges int
	// DataDir, if set, keeps the account in this directory (created if
	// missing) so that it survives a restart, even a crash: every change
	// is in a write-ahead log, fsynced before the response is written,
	// and compacted into snapshots. NewServer loads what the directory
	// holds and fails with an error naming the file if any of it is
	// damaged ([ErrDataCorrupt]), or if another server has it open
	// ([ErrDataDirInUse]). Empty (the default) keeps everything in memory.
	DataDir string
	// CompactAfterBytes is the size of the write-ahead log after which the
	// server writes a snapshot and starts a new log. Defaults to 64 MiB.
	CompactAfterBytes int64
}

// Server is an in-process fake of an Azure Cosmos DB for NoSQL account for
// tests: the local server core ([localcosmos.Server], whose methods it
// has) with faults, added latency and lagging replicas on top. Create one
// with [New] or [NewServer]; it is safe for concurrent use.
type Server struct {
	*localcosmos.Server

	latency  atomic.Pointer[[2]time.Duration] // added latency: min, max (latency.go)
	faultsMu sync.Mutex
	faults   []*faultEntry
	faultSeq uint64

	closeOnce sync.Once
	done      chan struct{} // closed by Close; ends fault delays and latency
}

// NewServer starts a server listening on Options.Addr (by default 127.0.0.1
// on a free port).
func NewServer(opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Server{done: make(chan struct{})}
	core := &localcosmos.Options{
		Key:                o.Key,
		Auth:               o.Auth,
		Logf:               o.Logf,
		Region:             o.Region,
		Addr:               o.Addr,
		ConsistencyLevel:   o.ConsistencyLevel,
		PartitionKeyRanges: o.PartitionKeyRanges,
		DataDir:            o.DataDir,
		CompactAfterBytes:  o.CompactAfterBytes,
		Intercept:          interceptor{s},
	}
	if o.Lag != nil {
		core.Replicas = newLagPolicy(*o.Lag)
	}
	srv, err := localcosmos.NewServer(core)
	if err != nil {
		return nil, err
	}
	s.Server = srv
	return s, nil
}

// Close stops the server and closes the client returned by
// [Server.Client]. It cuts injected delays short, waits (up to a few
// seconds) for requests in progress to finish, then closes all
// connections. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.Server.Close()
	})
}
