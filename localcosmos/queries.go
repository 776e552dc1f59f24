package localcosmos

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash/fnv"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/duroxide-go/cdb/localcosmos/internal/query"
)

// Queries: POST .../docs with x-ms-documentdb-query: True and
// Content-Type: application/query+json, body {"query", "parameters"}.
//
// Scope: with an x-ms-documentdb-partitionkey header the query reads that
// logical partition (or, for a hierarchical key, the partitions under the
// given prefix). With x-ms-documentdb-partitionkeyrangeid "0" (how ReadMany
// addresses the single physical partition) it reads the whole container as
// one partition. Without either it is a cross-partition query: if its WHERE
// clause pins the partition key (c.pk = 'x') the gateway routes it to that
// partition; otherwise it must be servable by the gateway (plain filters and
// projections) or it is refused with 400/1004, as azcosmos v1.5.0 has no
// client query engine.
//
// Paging: x-ms-max-item-count (default 100; -1 = as many as fit in 4 MB) and
// x-ms-continuation. Queries that map each document to its own results
// (filters, projections, JOINs: everything the gateway serves across
// partitions) resume after the last document read, by its position in
// creation order, so documents inserted between pages appear later or not
// at all and are never duplicated or skipped over; a document replaced
// between pages keeps its position. Queries that need the whole input
// (ORDER BY, TOP, OFFSET/LIMIT, aggregates, DISTINCT, GROUP BY) are run again
// for each page and resume by position in the result, which can shift if
// documents are written between pages.

const (
	defaultPageSize = 100
	maxPageBytes    = 4 * 1024 * 1024
)

type queryBody struct {
	Query      *string `json:"query"`
	Parameters []struct {
		Name  string `json:"name"`
		Value any    `json:"value"`
	} `json:"parameters"`
}

// continuation is the state inside a continuation token.
type continuation struct {
	Hash   uint64 `json:"h"`
	Seq    uint64 `json:"s,omitempty"` // streaming: resume after this document
	Part   uint64 `json:"p,omitempty"` // streaming: document read in part
	Skip   int    `json:"k,omitempty"` // streaming: results of Part already returned
	Offset int    `json:"o,omitempty"` // buffered: results already returned
	Range  int    `json:"r,omitempty"` // cross-partition: the partition key range being read
}

// queryCache keeps parsed queries by text; *query.Query is immutable.
type queryCache struct {
	mu sync.Mutex
	m  map[string]*query.Query
}

// parsedQueries caches query texts; parsedConditions caches patch
// conditions apart, as clients often write those with literal values
// (a timestamp in each), which would otherwise flush the queries out.
var (
	parsedQueries    = &queryCache{m: map[string]*query.Query{}}
	parsedConditions = &queryCache{m: map[string]*query.Query{}}
)

func parseQuery(text string) (*query.Query, *apiError) { return parsedQueries.parse(text) }

func (qc *queryCache) parse(text string) (*query.Query, *apiError) {
	qc.mu.Lock()
	q := qc.m[text]
	qc.mu.Unlock()
	if q != nil {
		return q, nil
	}
	q, err := query.Parse(text)
	if err != nil {
		return nil, fromQueryError(err)
	}
	qc.mu.Lock()
	if len(qc.m) >= 1024 {
		qc.m = map[string]*query.Query{}
	}
	qc.m[text] = q
	qc.mu.Unlock()
	return q, nil
}

func fromQueryError(err error) *apiError {
	var qe *query.Error
	if errors.As(err, &qe) {
		return newSubError(qe.Status, qe.SubStatus, "%s", qe.Message)
	}
	return errBadRequest("%s", err.Error())
}

// parseQueryRequest decodes the body of a query request.
func parseQueryRequest(req *request) (*query.Query, query.Params, *apiError) {
	if ct := req.r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/query+json") {
		return nil, nil, errBadRequest(msgQueryContentType)
	}
	var qb queryBody
	if err := decodeJSON(req.body, &qb); err != nil || qb.Query == nil {
		return nil, nil, errBadRequest(msgInvalidPayload)
	}
	params := query.Params{}
	for _, p := range qb.Parameters {
		params[p.Name] = p.Value
	}
	q, e := parseQuery(*qb.Query)
	if e != nil {
		return nil, nil, e
	}
	return q, params, nil
}

// indexPolicy converts a container's indexingPolicy to the query engine's form.
func indexPolicy(body map[string]any) query.IndexPolicy {
	var ip query.IndexPolicy
	m, _ := body["indexingPolicy"].(map[string]any)
	if m == nil {
		return ip
	}
	paths := func(key string) []string {
		var out []string
		list, _ := m[key].([]any)
		for _, x := range list {
			if xm, ok := x.(map[string]any); ok {
				if p, ok := xm["path"].(string); ok {
					out = append(out, p)
				}
			}
		}
		return out
	}
	ip.IncludedPaths = paths("includedPaths")
	ip.ExcludedPaths = paths("excludedPaths")
	comps, _ := m["compositeIndexes"].([]any)
	for _, ci := range comps {
		list, _ := ci.([]any)
		var cps []query.CompositePath
		for _, x := range list {
			xm, _ := x.(map[string]any)
			p, _ := xm["path"].(string)
			o, _ := xm["order"].(string)
			cps = append(cps, query.CompositePath{Path: p, Order: strings.ToLower(o)})
		}
		ip.CompositeIndexes = append(ip.CompositeIndexes, cps)
	}
	return ip
}

// evalCondition evaluates a patch condition ("FROM c WHERE ...") on a document.
func evalCondition(cond string, doc map[string]any) (bool, *apiError) {
	t := strings.TrimSpace(cond)
	if len(t) < 4 || !strings.EqualFold(t[:4], "from") {
		return false, errBadRequest("Invalid patch request: the condition '%s' must be a filter predicate of the form 'FROM c WHERE <condition>'.", cond)
	}
	q, e := parsedConditions.parse("SELECT VALUE 1 " + t)
	if e != nil {
		return false, e
	}
	res, err := q.Execute([]map[string]any{doc}, nil, query.Options{})
	if err != nil {
		return false, fromQueryError(err)
	}
	return len(res) > 0, nil
}

// pageSize reads x-ms-max-item-count; 0 means no count limit.
func pageSize(r *http.Request) (int, *apiError) {
	v := strings.TrimSpace(r.Header.Get("x-ms-max-item-count"))
	if v == "" {
		return defaultPageSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < -1 {
		return 0, errBadRequest("Invalid value '%s' for header x-ms-max-item-count.", v)
	}
	switch n {
	case -1:
		return 0, nil
	case 0:
		return defaultPageSize, nil
	}
	return n, nil
}

func queryHash(text string, params query.Params, scope string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(text))
	h.Write([]byte{0})
	h.Write(marshalJSON(params))
	h.Write([]byte{0})
	h.Write([]byte(scope))
	return h.Sum64()
}

func encodeContinuation(c continuation) string {
	b, _ := json.Marshal(c)
	tok := base64.RawURLEncoding.EncodeToString(b)
	return `{"token":"` + tok + `","range":{"min":"","max":"FF"}}`
}

func decodeContinuation(s string, hash uint64) (continuation, *apiError) {
	var c continuation
	var wrap struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(s), &wrap); err != nil {
		return c, errBadRequest(msgInvalidContinuation)
	}
	b, err := base64.RawURLEncoding.DecodeString(wrap.Token)
	if err != nil || json.Unmarshal(b, &c) != nil || c.Hash != hash {
		return c, errBadRequest(msgInvalidContinuation)
	}
	return c, nil
}

func (s *Server) queryItems(req *request) (*response, *apiError) {
	q, params, e := parseQueryRequest(req)
	if e != nil {
		return nil, e
	}
	size, e := pageSize(req.r)
	if e != nil {
		return nil, e
	}
	st := s.st
	st.mu.RLock()
	c, e := st.container(req.segs[1], req.segs[3])
	if e != nil {
		st.mu.RUnlock()
		return nil, e
	}
	opts := query.Options{Index: indexPolicy(c.body)}
	var docs []*document
	scope := ""
	inScope := func(*document) bool { return true }
	pkHeader := req.r.Header.Get("x-ms-documentdb-partitionkey")
	rangeID := req.r.Header.Get("x-ms-documentdb-partitionkeyrangeid")
	switch {
	case pkHeader != "":
		vals, e := c.parsePKHeader(pkHeader, false)
		if e != nil {
			st.mu.RUnlock()
			return nil, e
		}
		scope = "pk:" + pkKey(vals)
		docs = c.live(c.prefixDocs(vals))
		inScope = func(d *document) bool { return pkKey(c.docPK(d.body)[:len(vals)]) == pkKey(vals) }
	case rangeID != "":
		if rangeID != "0" {
			st.mu.RUnlock()
			return nil, newSubError(http.StatusGone, 1002, "The partition key range '%s' is gone.", rangeID)
		}
		scope = "range:0"
		docs = c.live(c.scanDocs(q, params))
	default:
		if vals, ok := q.PartitionKeyFilter(c.pk.paths, params); ok && len(vals) == len(c.pk.paths) {
			scope = "pk:" + pkKey(normalizePK(vals))
			docs = c.live(c.partitionDocs(pkKey(normalizePK(vals))))
			key := pkKey(normalizePK(vals))
			inScope = func(d *document) bool { return d.pk == key }
		} else {
			if !headerTrue(req.r, "x-ms-documentdb-query-enablecrosspartition") {
				st.mu.RUnlock()
				return nil, errBadRequest(msgCrossPartitionOff)
			}
			opts.CrossPartition = true
			scope = "cross"
			docs = c.live(c.scanDocs(q, params))
		}
	}
	docs, lagLSN := s.laggedDocs(c, docs, sessionFloor(req.r), inScope)
	token := readSessionToken(c, lagLSN)
	collRID := c.rid
	st.mu.RUnlock()

	if err := q.Validate(opts); err != nil {
		return nil, fromQueryError(err)
	}
	ranges := 1
	if scope == "cross" {
		ranges = st.ranges
	}
	page, cont, scanned, e := runRangedPage(q, params, opts, docs, req.r.Header.Get("x-ms-continuation"), size, queryHash(q.Text(), params, scope), ranges)
	if e != nil {
		return nil, e
	}
	resp := queryResponse("Documents", collRID, page, cont)
	resp.header.Set("x-ms-session-token", token)
	resp.charge = 2.3 + 0.05*float64(scanned) + float64(len(resp.body))/1024*0.3
	return resp, nil
}

// normalizePK converts query routing values to partition key components.
func normalizePK(vals []any) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		switch v.(type) {
		case string, float64, bool, nil:
			out[i] = v
		default:
			out[i] = undefinedValue{}
		}
	}
	return out
}

// prefixDocs returns the documents whose partition key starts with vals
// (all components for a full key), in creation order. The result is a copy.
func (c *container) prefixDocs(vals []any) []*document {
	if len(vals) == len(c.pk.segs) {
		return append([]*document(nil), c.partitionDocs(pkKey(vals))...)
	}
	var out []*document
	for _, d := range c.all {
		if pkKey(c.docPK(d.body)[:len(vals)]) == pkKey(vals) {
			out = append(out, d)
		}
	}
	return out
}

func queryResponse(key, rid string, page []json.RawMessage, token string) *response {
	var b strings.Builder
	b.WriteString(`{"_rid":`)
	b.Write(marshalJSON(rid))
	b.WriteString(`,"` + key + `":[`)
	for i, p := range page {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(p)
	}
	b.WriteString(`],"_count":` + strconv.Itoa(len(page)) + `}`)
	resp := newResponse(http.StatusOK, []byte(b.String()))
	resp.header.Set("x-ms-item-count", strconv.Itoa(len(page)))
	if token != "" {
		resp.header.Set("x-ms-continuation", token)
	}
	resp.docs = len(page)
	return resp
}

// isStreaming reports whether q maps each document to its own results, so
// that it can be run document by document.
func isStreaming(q *query.Query, opts query.Options) bool {
	o := opts
	o.CrossPartition = true
	if q.Validate(o) != nil {
		return false
	}
	// A query without FROM yields a row even with no input.
	res, err := q.Execute(nil, nil, opts)
	return err == nil && len(res) == 0
}

// runQueryPage computes one page of results. It returns the page, the
// continuation token for the next page ("" when done) and the number of
// documents read.
func runQueryPage(q *query.Query, params query.Params, opts query.Options, docs []*document, token string, size int, hash uint64) ([]json.RawMessage, string, int, *apiError) {
	var cont continuation
	if token != "" {
		var e *apiError
		if cont, e = decodeContinuation(token, hash); e != nil {
			return nil, "", 0, e
		}
	}
	page, next, scanned, e := runQueryPageFrom(q, params, opts, docs, cont, size, hash)
	if e != nil || next == nil {
		return page, "", scanned, e
	}
	return page, encodeContinuation(*next), scanned, nil
}

// runQueryPageFrom computes one page of results from cont. It returns the
// page, the state for the next page (nil when done) and the number of
// documents read.
func runQueryPageFrom(q *query.Query, params query.Params, opts query.Options, docs []*document, cont continuation, size int, hash uint64) ([]json.RawMessage, *continuation, int, *apiError) {
	limit := size
	if limit <= 0 {
		limit = int(^uint(0) >> 1)
	}
	// SELECT * returns the stored maps themselves; their serialized form is
	// already at hand.
	stored := map[unsafe.Pointer][]byte{}
	marshalResult := func(v any) json.RawMessage {
		if m, ok := v.(map[string]any); ok {
			if raw, ok := stored[reflect.ValueOf(m).UnsafePointer()]; ok && raw != nil {
				return raw
			}
		}
		return marshalJSON(v)
	}
	exec := func(ds []*document) ([]any, *apiError) {
		in := make([]map[string]any, len(ds))
		for i, d := range ds {
			in[i] = d.body
			if d.raw != nil {
				stored[reflect.ValueOf(d.body).UnsafePointer()] = d.raw
			}
		}
		res, err := q.Execute(in, params, opts)
		if err != nil {
			return nil, fromQueryError(err)
		}
		return res, nil
	}
	var page []json.RawMessage
	bytes := 0
	if !isStreaming(q, opts) {
		res, e := exec(docs)
		if e != nil {
			return nil, nil, 0, e
		}
		i := cont.Offset
		for ; i < len(res) && len(page) < limit; i++ {
			raw := marshalResult(res[i])
			if len(page) > 0 && bytes+len(raw) > maxPageBytes {
				break
			}
			bytes += len(raw)
			page = append(page, raw)
		}
		if i < len(res) {
			return page, &continuation{Hash: hash, Offset: i}, len(docs), nil
		}
		return page, nil, len(docs), nil
	}
	// Streaming: resume after the last document fully read, skipping the
	// results already returned of a document read in part.
	start := sort.Search(len(docs), func(i int) bool { return docs[i].seq > cont.Seq })
	skip := 0
	if cont.Skip > 0 && start < len(docs) && docs[start].seq == cont.Part {
		skip = cont.Skip
	}
	scanned := 0
	full := false
	state := continuation{Hash: hash, Seq: cont.Seq}
	i := start
	for i < len(docs) && !full {
		need := limit - len(page)
		// Fast path: a chunk of documents whose results all fit.
		if skip == 0 && need > 1 {
			end := min(len(docs), i+need)
			res, e := exec(docs[i:end])
			if e != nil {
				return nil, nil, 0, e
			}
			if len(res) <= need {
				raws := make([]json.RawMessage, len(res))
				total := 0
				for k, r := range res {
					raws[k] = marshalResult(r)
					total += len(raws[k])
				}
				if bytes+total <= maxPageBytes {
					page = append(page, raws...)
					bytes += total
					scanned += end - i
					state = continuation{Hash: hash, Seq: docs[end-1].seq}
					i = end
					full = len(page) >= limit
					continue
				}
			}
		}
		// Slow path: one document.
		res, e := exec(docs[i : i+1])
		if e != nil {
			return nil, nil, 0, e
		}
		scanned++
		k := skip
		for ; k < len(res); k++ {
			raw := marshalResult(res[k])
			if len(page) >= limit || (len(page) > 0 && bytes+len(raw) > maxPageBytes) {
				break
			}
			page = append(page, raw)
			bytes += len(raw)
		}
		if k < len(res) {
			state = continuation{Hash: hash, Seq: prevSeq(docs, i), Part: docs[i].seq, Skip: k}
			break
		}
		skip = 0
		state = continuation{Hash: hash, Seq: docs[i].seq}
		i++
		full = len(page) >= limit
	}
	// Look ahead so that the last page does not come with a token to an
	// empty page.
	more := state.Skip > 0
	for j := i; j < len(docs) && !more; j++ {
		res, e := exec(docs[j : j+1])
		if e != nil {
			return nil, nil, 0, e
		}
		more = len(res) > 0
	}
	if more {
		return page, &state, scanned, nil
	}
	return page, nil, scanned, nil
}

// prevSeq is the seq of the document before docs[i] (0 for the first).
func prevSeq(docs []*document, i int) uint64 {
	if i == 0 {
		return 0
	}
	return docs[i-1].seq
}

// queryResources runs a query over database, container or offer resources.
func (s *Server) queryResources(req *request, key, rid string, collect func() ([]map[string]any, *apiError)) (*response, *apiError) {
	q, params, e := parseQueryRequest(req)
	if e != nil {
		return nil, e
	}
	size, e := pageSize(req.r)
	if e != nil {
		return nil, e
	}
	s.st.mu.RLock()
	bodies, e := collect()
	s.st.mu.RUnlock()
	if e != nil {
		return nil, e
	}
	docs := make([]*document, len(bodies))
	for i, b := range bodies {
		docs[i] = &document{body: b, seq: uint64(i + 1)}
	}
	opts := query.Options{}
	if err := q.Validate(opts); err != nil {
		return nil, fromQueryError(err)
	}
	page, token, _, e := runQueryPage(q, params, opts, docs, req.r.Header.Get("x-ms-continuation"), size, queryHash(q.Text(), params, key+rid))
	if e != nil {
		return nil, e
	}
	resp := queryResponse(key, rid, page, token)
	resp.charge = 2.5
	return resp, nil
}

func (s *Server) queryDatabases(req *request) (*response, *apiError) {
	return s.queryResources(req, "Databases", "", func() ([]map[string]any, *apiError) {
		var out []map[string]any
		for _, db := range sortedDatabases(s.st) {
			out = append(out, db.body)
		}
		return out, nil
	})
}

func (s *Server) queryContainers(req *request) (*response, *apiError) {
	var rid string
	return s.queryResources(req, "DocumentCollections", rid, func() ([]map[string]any, *apiError) {
		db := s.st.dbs[req.segs[1]]
		if db == nil {
			return nil, errOwnerNotFound()
		}
		var out []map[string]any
		for _, c := range sortedContainers(db) {
			out = append(out, c.body)
		}
		return out, nil
	})
}

func (s *Server) queryOffers(req *request) (*response, *apiError) {
	return s.queryResources(req, "Offers", "", func() ([]map[string]any, *apiError) {
		return s.st.allOffers(), nil
	})
}
