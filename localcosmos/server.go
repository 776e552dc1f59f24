package localcosmos

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/google/uuid"
)

// maxRequestBody is the most the server reads of a request body. Anything
// larger is refused with 413 without being read further.
const maxRequestBody = 4 * 1024 * 1024

// Options configure a [Server]. The zero value (or nil) is ready to use.
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
	// server (see cosmostest/cmd/cosmostest).
	Addr string
	// ConsistencyLevel is the account's default consistency level:
	// "Strong", "BoundedStaleness", "Session", "ConsistentPrefix" or
	// "Eventual". Requests may ask for a weaker level only (400 otherwise,
	// as on the service). It changes nothing else: the server always reads
	// the latest write. Defaults to "Session", the service's default.
	ConsistencyLevel string
	// Replicas, if set, models lagging replicas (replicas.go): a read or
	// query without a session token covering a logical partition's latest
	// writes may be served from an older version of that partition, as a
	// lagging replica of the service would serve it. Writes and their ETag
	// checks always see the latest version. Nil (the default) serves every
	// read from the latest version; cosmostest's Options.Lag sets it.
	Replicas ReplicaPolicy
	// Intercept, if set, sees every request before it is handled and may
	// delay, refuse or drop it (intercept.go). Nil (the default) handles
	// every request as it comes; cosmostest's faults and latency set it.
	Intercept Interceptor
	// PartitionKeyRanges is how many physical partitions (partition key
	// ranges) every container has; cross-partition queries are served one
	// range per page, with empty pages for empty ranges, as the gateway
	// does (ranges.go). Defaults to 1; at most 256.
	PartitionKeyRanges int
	// DataDir, if set, keeps the account in this directory (created if
	// missing) so that it survives a restart, even a crash: every change
	// is in a write-ahead log, fsynced before the response is written,
	// and compacted into snapshots (persist.go). NewServer loads what the
	// directory holds and fails with an error naming the file if any of it
	// is damaged ([ErrDataCorrupt]), or if another server has it open
	// ([ErrDataDirInUse]). Empty (the default) keeps everything in memory.
	DataDir string
	// CompactAfterBytes is the size of the write-ahead log after which the
	// server writes a snapshot and starts a new log. Defaults to 64 MiB.
	CompactAfterBytes int64

	// fs is the file system DataDir is on: the operating system's when
	// nil, a simulated one that loses power in tests
	// (persist_powerloss_test.go).
	fs dataFS
}

// consistencyStrength orders the consistency levels, strongest first.
var consistencyStrength = map[string]int{"Strong": 5, "BoundedStaleness": 4, "Session": 3, "ConsistentPrefix": 2, "Eventual": 1}

// Server is a local Azure Cosmos DB for NoSQL account, serving the REST
// API azcosmos uses over plain HTTP (on 127.0.0.1 by default) and in
// process ([Server.InProcessTransport]). Create one with [NewServer]; it is
// safe for concurrent use.
type Server struct {
	opts     Options
	key      string
	keyBytes []byte
	ln       net.Listener
	srv      *http.Server
	endpoint string
	st       *store
	clock    atomic.Pointer[func() time.Time]

	statsMu sync.Mutex
	stats   map[Op]*Stats

	clientMu sync.Mutex
	client   *azcosmos.Client
	closed   bool

	lag *lagState // nil unless Options.Replicas

	closeOnce sync.Once
	inproc    inProcess // requests served by InProcessTransport (transport.go)
}

// NewServer starts a server listening on Options.Addr (by default 127.0.0.1
// on a free port).
func NewServer(opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Key == "" {
		o.Key = EmulatorKey
	}
	if o.Region == "" {
		o.Region = "South Central US"
	}
	if o.ConsistencyLevel == "" {
		o.ConsistencyLevel = "Session"
	}
	if consistencyStrength[o.ConsistencyLevel] == 0 {
		return nil, fmt.Errorf("localcosmos: unknown consistency level %q", o.ConsistencyLevel)
	}
	if o.PartitionKeyRanges == 0 {
		o.PartitionKeyRanges = 1
	}
	if o.PartitionKeyRanges < 1 || o.PartitionKeyRanges > 256 {
		return nil, fmt.Errorf("localcosmos: PartitionKeyRanges %d is outside 1..256", o.PartitionKeyRanges)
	}
	switch o.Auth {
	case AuthKey, AuthToken, AuthKeyOrToken:
	default:
		return nil, fmt.Errorf("localcosmos: unknown auth mode %v", o.Auth)
	}
	keyBytes, err := base64.StdEncoding.DecodeString(o.Key)
	if err != nil {
		return nil, fmt.Errorf("localcosmos: key is not base64: %w", err)
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.CompactAfterBytes <= 0 {
		o.CompactAfterBytes = defaultCompactAfter
	}
	s := &Server{}
	st := newStore(func() int64 { return s.Now().Unix() })
	st.ranges = o.PartitionKeyRanges
	if o.DataDir != "" {
		logf := func(format string, args ...any) {
			if o.Logf != nil {
				o.Logf(format, args...)
			}
		}
		fsys := o.fs
		if fsys == nil {
			fsys = osFS{}
		}
		d, err := openDisk(st, fsys, o.DataDir, o.CompactAfterBytes, logf)
		if err != nil {
			return nil, err
		}
		st.disk, st.wal = d, d.gs
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		st.closeDisk()
		return nil, fmt.Errorf("localcosmos: listen: %w", err)
	}
	*s = Server{
		opts:     o,
		key:      o.Key,
		keyBytes: keyBytes,
		ln:       ln,
		endpoint: "http://" + ln.Addr().String() + "/",
		stats:    map[Op]*Stats{},
		lag:      newLagState(o.Replicas),
		st:       st,
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Endpoint returns the account endpoint, "http://127.0.0.1:<port>/".
func (s *Server) Endpoint() string { return s.endpoint }

// Key returns the account master key.
func (s *Server) Key() string { return s.key }

// Client returns a client for the server, created on first use and closed
// by [Server.Close]. It uses key auth (token auth for an [AuthToken] server)
// and the SDK's default options, including its retries. It returns nil after
// Close.
func (s *Server) Client() *azcosmos.Client {
	s.clientMu.Lock()
	defer s.clientMu.Unlock()
	if s.closed {
		return nil
	}
	if s.client == nil {
		c, err := s.NewClient(nil)
		if err != nil {
			panic(fmt.Sprintf("localcosmos: new client: %v", err))
		}
		s.client = c
	}
	return s.client
}

// NewClient returns a new client for the server with the given options (nil
// for the SDK defaults): key auth, or token auth from [Server.TokenCredential]
// for an [AuthToken] server. The caller closes it.
func (s *Server) NewClient(opts *azcosmos.ClientOptions) (*azcosmos.Client, error) {
	if s.opts.Auth == AuthToken {
		return azcosmos.NewClient(s.endpoint, s.TokenCredential(), opts)
	}
	cred, err := azcosmos.NewKeyCredential(s.key)
	if err != nil {
		return nil, err
	}
	return azcosmos.NewClientWithKey(s.endpoint, cred, opts)
}

// Close stops the server and closes the client returned by
// [Server.Client]. It waits (up to a few seconds) for requests in progress to
// finish, then closes all connections and the data directory. It is safe to
// call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.clientMu.Lock()
		s.closed = true
		c := s.client
		s.client = nil
		s.clientMu.Unlock()
		if c != nil {
			c.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(ctx)
		_ = s.srv.Close()
		s.closeInProcess()
		s.st.closeDisk()
	})
}

// Now returns the server's current time, used for _ts and other time-based
// behaviour. Authentication (x-ms-date skew, token expiry) uses the wall
// clock instead, as the SDK stamps requests with the wall clock.
func (s *Server) Now() time.Time {
	if f := s.clock.Load(); f != nil {
		return (*f)()
	}
	return time.Now()
}

// SetClock replaces the server clock; nil restores the wall clock.
func (s *Server) SetClock(now func() time.Time) {
	if now == nil {
		s.clock.Store(nil)
		return
	}
	s.clock.Store(&now)
}

// request is one incoming request, classified.
type request struct {
	r          *http.Request
	segs       []string // path segments, unescaped
	op         Op
	resType    string // resource type used in the signature ("docs", "colls", ...)
	resLink    string // resource link used in the signature
	body       []byte
	activityID string
	token      bool     // authorized with an Entra ID token
	priority   Priority // x-ms-cosmos-priority-level (priority.go)
}

// response is what a handler produces; the server writes it (or drops it).
type response struct {
	status int
	header http.Header
	body   []byte
	docs   int     // documents in body, for Stats
	charge float64 // request units
}

func newResponse(status int, body []byte) *response {
	return &response{status: status, header: http.Header{}, body: body}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, perr := parseRequest(r)
	s.countRequest(req.op, req.priority)
	ic := s.intercept(req.op, r)
	switch {
	case ic.Abandon:
		return
	case ic.Drop && !ic.AfterApply:
		s.logf("%s %s (%s) -> dropped before apply", r.Method, r.URL.Path, req.op)
		hijackClose(w)
		return
	case ic.Refuse != nil && !ic.AfterApply:
		s.writeResponse(w, req, s.errorResponse(req, refusalError(ic.Refuse)))
		return
	}
	resp := s.handle(req, perr)
	if ic.Refuse != nil {
		s.logf("%s %s (%s) -> %d, answered %d after apply", r.Method, r.URL.Path, req.op, resp.status, ic.Refuse.Status)
		resp = s.errorResponse(req, refusalError(ic.Refuse))
	}
	if ic.Drop {
		s.logf("%s %s (%s) -> %d, dropped after apply", r.Method, r.URL.Path, req.op, resp.status)
		hijackClose(w)
		return
	}
	s.writeResponse(w, req, resp)
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf("localcosmos: "+format, args...)
	}
}

func hijackClose(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// handle authenticates and executes a request.
func (s *Server) handle(req *request, perr *apiError) *response {
	if perr != nil {
		return s.errorResponse(req, perr)
	}
	body, err := readBody(req.r)
	if err != nil {
		return s.errorResponse(req, errBadRequest(msgInvalidPayload))
	}
	if len(body) > maxRequestBody {
		return s.errorResponse(req, errTooLarge())
	}
	req.body = body
	token, aerr := s.authenticate(req)
	if aerr != nil {
		return s.errorResponse(req, aerr)
	}
	req.token = token
	if token && isControlPlane(req.op) {
		return s.errorResponse(req, errControlPlane(req.r))
	}
	if cl := req.r.Header.Get("x-ms-consistency-level"); cl != "" {
		n := consistencyStrength[cl]
		if n == 0 {
			return s.errorResponse(req, errBadRequest("Invalid value '%s' for header x-ms-consistency-level.", cl))
		}
		if n > consistencyStrength[s.opts.ConsistencyLevel] {
			return s.errorResponse(req, errBadRequest("ConsistencyLevel %s specified in the request is invalid when service is configured with consistency level %s. Ensure the request consistency level is not stronger than the service consistency level.", cl, s.opts.ConsistencyLevel))
		}
	}
	if err := s.st.failure(); err != nil {
		return s.errorResponse(req, errDisk(err))
	}
	resp, herr := s.route(req)
	// Answer only once everything this request wrote or read is on disk.
	_ = s.st.waitDurable()
	if err := s.st.failure(); err != nil {
		// This request's change may be the one that was not logged.
		return s.errorResponse(req, errDisk(err))
	}
	if herr != nil {
		return s.errorResponse(req, herr)
	}
	return resp
}

func (s *Server) route(req *request) (*response, *apiError) {
	switch req.op {
	case OpReadAccount:
		return s.readAccount(req)
	case OpCreateDatabase:
		return s.createDatabase(req)
	case OpReadDatabase:
		return s.readDatabase(req)
	case OpDeleteDatabase:
		return s.deleteDatabase(req)
	case OpQueryDatabases:
		return s.queryDatabases(req)
	case OpCreateContainer:
		return s.createContainer(req)
	case OpReadContainer:
		return s.readContainer(req)
	case OpReplaceContainer:
		return s.replaceContainer(req)
	case OpDeleteContainer:
		return s.deleteContainer(req)
	case OpQueryContainers:
		return s.queryContainers(req)
	case OpReadPartitionKeyRanges:
		return s.readPartitionKeyRanges(req)
	case OpCreateItem, OpUpsertItem:
		return s.createItem(req)
	case OpReadItem:
		return s.readItem(req)
	case OpReplaceItem:
		return s.replaceItem(req)
	case OpDeleteItem:
		return s.deleteItem(req)
	case OpPatchItem:
		return s.patchItem(req)
	case OpQuery:
		return s.queryItems(req)
	case OpBatch:
		return s.batch(req)
	case OpQueryOffers:
		return s.queryOffers(req)
	case OpReadOffer:
		return s.readOffer(req)
	case OpReplaceOffer:
		return s.replaceOffer(req)
	}
	return nil, errBadRequest("cosmostest does not support the request %s %s.", req.r.Method, req.r.URL.Path)
}

// parseRequest splits the path and classifies the operation. A path that
// cannot be parsed yields an error to answer after counting.
func parseRequest(r *http.Request) (*request, *apiError) {
	req := &request{r: r, op: OpUnsupported, activityID: r.Header.Get("x-ms-activity-id"), priority: RequestPriority(r)}
	if _, err := uuid.Parse(req.activityID); err != nil {
		req.activityID = uuid.NewString()
	}
	p := strings.Trim(r.URL.EscapedPath(), "/")
	if p != "" {
		for _, seg := range strings.Split(p, "/") {
			u, err := url.PathUnescape(seg)
			if err != nil {
				return req, errBadRequest("The request URL is invalid.")
			}
			req.segs = append(req.segs, u)
		}
	}
	segs := req.segs
	// The resource type and link the client signs (see
	// https://learn.microsoft.com/rest/api/cosmos-db/access-control-on-cosmosdb-resources).
	switch n := len(segs); {
	case n == 0:
	case n%2 == 1:
		req.resType = segs[n-1]
		req.resLink = strings.Join(segs[:n-1], "/")
	default:
		req.resType = segs[n-2]
		req.resLink = strings.Join(segs, "/")
		if req.resType == "offers" {
			req.resLink = strings.ToLower(segs[n-1]) // offers are addressed by rid
		}
	}
	isQuery := headerTrue(r, "x-ms-documentdb-query") || strings.HasPrefix(r.Header.Get("Content-Type"), "application/query+json")
	m := r.Method
	n := len(segs)
	switch {
	case n == 0 && m == http.MethodGet:
		req.op = OpReadAccount
	case n >= 1 && segs[0] == "offers":
		switch {
		case n == 1 && m == http.MethodPost && isQuery:
			req.op = OpQueryOffers
		case n == 2 && m == http.MethodGet:
			req.op = OpReadOffer
		case n == 2 && m == http.MethodPut:
			req.op = OpReplaceOffer
		}
	case n == 0 || segs[0] != "dbs":
	case n == 1 && m == http.MethodPost:
		req.op = pick(isQuery, OpQueryDatabases, OpCreateDatabase)
	case n == 2 && m == http.MethodGet:
		req.op = OpReadDatabase
	case n == 2 && m == http.MethodDelete:
		req.op = OpDeleteDatabase
	case segs[2] != "colls":
	case n == 3 && m == http.MethodPost:
		req.op = pick(isQuery, OpQueryContainers, OpCreateContainer)
	case n == 4 && m == http.MethodGet:
		req.op = OpReadContainer
	case n == 4 && m == http.MethodPut:
		req.op = OpReplaceContainer
	case n == 4 && m == http.MethodDelete:
		req.op = OpDeleteContainer
	case n == 5 && segs[4] == "pkranges" && m == http.MethodGet:
		req.op = OpReadPartitionKeyRanges
	case segs[4] != "docs":
	case n == 5 && m == http.MethodPost:
		switch {
		case headerTrue(r, "x-ms-cosmos-is-batch-request"):
			req.op = OpBatch
		case isQuery:
			req.op = OpQuery
		case headerTrue(r, "x-ms-documentdb-is-upsert"):
			req.op = OpUpsertItem
		default:
			req.op = OpCreateItem
		}
	case n == 6 && m == http.MethodGet:
		req.op = OpReadItem
	case n == 6 && m == http.MethodPut:
		req.op = OpReplaceItem
	case n == 6 && m == http.MethodDelete:
		req.op = OpDeleteItem
	case n == 6 && m == http.MethodPatch:
		req.op = OpPatchItem
	}
	return req, nil
}

func pick(cond bool, a, b Op) Op {
	if cond {
		return a
	}
	return b
}

func headerTrue(r *http.Request, name string) bool {
	return strings.EqualFold(strings.TrimSpace(r.Header.Get(name)), "true")
}

// prefersMinimal reports whether the client asked for no content on writes.
func prefersMinimal(r *http.Request) bool {
	for _, v := range r.Header.Values("Prefer") {
		if strings.Contains(strings.ToLower(v), "return=minimal") {
			return true
		}
	}
	return false
}

// errorResponse renders an error the way the service does.
func (s *Server) errorResponse(req *request, e *apiError) *response {
	msg := e.Message + "\r\nActivityId: " + req.activityID + ", " + serviceVersion
	body := marshalJSON(map[string]any{"code": errorCode(e.Status), "message": msg})
	resp := newResponse(e.Status, body)
	if e.SubStatus != 0 {
		resp.header.Set("x-ms-substatus", strconv.Itoa(e.SubStatus))
	}
	for k, v := range e.Headers {
		resp.header.Set(k, v)
	}
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusRequestTimeout:
	default:
		resp.charge = 1
	}
	return resp
}

func (s *Server) writeResponse(w http.ResponseWriter, req *request, resp *response) {
	h := w.Header()
	for k, v := range resp.header {
		h[k] = v
	}
	if len(resp.body) > 0 || (resp.status != http.StatusNoContent && resp.status != http.StatusNotModified) {
		h.Set("Content-Type", "application/json")
	}
	h.Set("x-ms-activity-id", req.activityID)
	h.Set("x-ms-request-charge", strconv.FormatFloat(roundCharge(resp.charge), 'f', -1, 64))
	h.Set("x-ms-gatewayversion", "version=2.14.0")
	h.Set("x-ms-serviceversion", "version=2.14.0.0")
	h.Set("Content-Length", strconv.Itoa(len(resp.body)))
	w.WriteHeader(resp.status)
	if len(resp.body) > 0 && req.r.Method != http.MethodHead {
		_, _ = w.Write(resp.body)
	}
	s.countResponse(req.op, resp.docs, len(resp.body), roundCharge(resp.charge))
	s.logf("%s %s (%s) -> %d", req.r.Method, req.r.URL.Path, req.op, resp.status)
}

func roundCharge(c float64) float64 {
	return float64(int64(c*100+0.5)) / 100
}

// readJSONObject decodes a request body that must be a JSON object.
func readJSONObject(body []byte) (map[string]any, *apiError) {
	var m map[string]any
	if err := decodeJSON(body, &m); err != nil || m == nil {
		return nil, errBadRequest(msgInvalidPayload)
	}
	return m, nil
}

// readBody reads up to maxRequestBody+1 bytes of r's body, in one buffer
// of the announced length when there is one.
func readBody(r *http.Request) ([]byte, error) {
	lr := io.LimitReader(r.Body, maxRequestBody+1)
	if n := r.ContentLength; n > 0 && n <= maxRequestBody {
		buf := bytes.NewBuffer(make([]byte, 0, n+1)) // +1: ReadFrom's probe for EOF
		_, err := buf.ReadFrom(lr)
		return buf.Bytes(), err
	}
	return io.ReadAll(lr)
}
