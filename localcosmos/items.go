package localcosmos

import (
	"net/http"
	"strconv"
)

// Point operations on items: create, upsert, read, replace, delete.
// (Patch is in patch.go, batches in batch.go, queries in queries.go.)

// readCharge is the request charge of reading a document of size bytes:
// 1 RU per started KB, like the service's point reads.
func readCharge(size int) float64 {
	return float64(kb(size))
}

// writeCharge is the request charge of writing a document of size bytes;
// the service charges about 5.7 RU for a 1 KB document with default indexing.
func writeCharge(size int) float64 {
	return 5.71 + 1.9*float64(kb(size)-1)
}

func kb(size int) int {
	n := (size + 1023) / 1024
	if n < 1 {
		n = 1
	}
	return n
}

// itemID extracts and validates the id of an item body.
func itemID(body map[string]any) (string, *apiError) {
	v, ok := body["id"]
	if !ok {
		return "", errBadRequest(msgIDMissing)
	}
	id, ok := v.(string)
	if !ok {
		return "", errBadRequest("The input content is invalid because the required properties - 'id; ' - are missing or not strings.")
	}
	if e := validateItemID(id); e != nil {
		return "", e
	}
	return id, nil
}

// parseItemBody decodes and checks an item sent in a request body.
func parseItemBody(data []byte) (map[string]any, string, *apiError) {
	if len(data) > maxDocumentSize {
		return nil, "", errTooLarge()
	}
	body, e := readJSONObject(data)
	if e != nil {
		return nil, "", e
	}
	id, e := itemID(body)
	if e != nil {
		return nil, "", e
	}
	return body, id, nil
}

// itemPK checks that the partition key of body equals the header's and
// returns its canonical form.
func (c *container) itemPK(header string, body map[string]any) (string, *apiError) {
	hv, e := c.parsePKHeader(header, true)
	if e != nil {
		return "", e
	}
	k := pkKey(c.docPK(body))
	if pkKey(hv) != k {
		return "", newSubError(http.StatusBadRequest, subPKMismatch, msgPKMismatch)
	}
	return k, nil
}

// headerPK parses the partition key header of a point operation.
func (c *container) headerPK(header string) (string, *apiError) {
	hv, e := c.parsePKHeader(header, true)
	if e != nil {
		return "", e
	}
	return pkKey(hv), nil
}

// ifMatch checks an If-Match precondition against the current document.
func ifMatch(cond string, d *document) bool {
	return cond == "" || cond == "*" || cond == d.etag
}

func sessionToken(c *container) string {
	return "0:-1#" + strconv.FormatInt(c.lsn, 10)
}

// itemResponse builds the response to a successful item write or read.
func itemResponse(req *request, c *container, status int, d *document, withBody bool, charge float64) *response {
	var body []byte
	docs := 0
	if withBody {
		body = d.raw
		docs = 1
	}
	resp := newResponse(status, body)
	resp.header.Set("etag", d.etag)
	resp.header.Set("x-ms-session-token", sessionToken(c))
	resp.header.Set("lsn", strconv.FormatInt(d.lsn, 10))
	resp.header.Set("x-ms-alt-content-path", "dbs/"+c.db.id+"/colls/"+c.id)
	resp.docs = docs
	resp.charge = charge
	return resp
}

func (s *Server) createItem(req *request) (*response, *apiError) {
	upsert := req.op == OpUpsertItem
	body, id, e := parseItemBody(req.body)
	if e != nil {
		return nil, e
	}
	st := s.st
	st.lock()
	defer st.unlock()
	c, e := st.container(req.segs[1], req.segs[3])
	if e != nil {
		return nil, e
	}
	pk, e := c.itemPK(req.r.Header.Get("x-ms-documentdb-partitionkey"), body)
	if e != nil {
		return nil, e
	}
	prev := c.get(pk, id)
	status := http.StatusCreated
	if prev != nil {
		if !upsert {
			return nil, errConflict()
		}
		if !ifMatch(req.r.Header.Get("If-Match"), prev) {
			return nil, errPrecondition()
		}
		status = http.StatusOK
	}
	if e := c.checkUnique(pk, id, body); e != nil {
		return nil, e
	}
	before := c.lsn
	d := c.newDocument(st, id, pk, body, prev, s.Now().Unix())
	c.put(d)
	s.recordWrite(c, pk, before, undoEntry{pk: pk, id: id, prev: prev})
	return itemResponse(req, c, status, d, !prefersMinimal(req.r), writeCharge(len(d.raw))), nil
}

func (s *Server) readItem(req *request) (*response, *apiError) {
	st := s.st
	st.mu.RLock()
	defer st.mu.RUnlock()
	c, e := st.container(req.segs[1], req.segs[3])
	if e != nil {
		return nil, e
	}
	pk, e := c.headerPK(req.r.Header.Get("x-ms-documentdb-partitionkey"))
	if e != nil {
		return nil, e
	}
	if e := urlItemIDError(req.segs[5]); e != nil {
		return nil, e
	}
	d, lsn := s.laggedGet(c, pk, req.segs[5], sessionFloor(req.r))
	if d == nil {
		e := errNotFound()
		e.Headers = map[string]string{"x-ms-session-token": readSessionToken(c, lsn)}
		return nil, e
	}
	var resp *response
	if inm := req.r.Header.Get("If-None-Match"); inm != "" && (inm == "*" || inm == d.etag) {
		resp = itemResponse(req, c, http.StatusNotModified, d, false, 1)
	} else {
		resp = itemResponse(req, c, http.StatusOK, d, true, readCharge(len(d.raw)))
	}
	resp.header.Set("x-ms-session-token", readSessionToken(c, lsn))
	return resp, nil
}

func (s *Server) replaceItem(req *request) (*response, *apiError) {
	body, id, e := parseItemBody(req.body)
	if e != nil {
		return nil, e
	}
	st := s.st
	st.lock()
	defer st.unlock()
	c, e := st.container(req.segs[1], req.segs[3])
	if e != nil {
		return nil, e
	}
	pk, e := c.itemPK(req.r.Header.Get("x-ms-documentdb-partitionkey"), body)
	if e != nil {
		return nil, e
	}
	if e := urlItemIDError(req.segs[5]); e != nil {
		return nil, e
	}
	if id != req.segs[5] {
		return nil, errBadRequest("The id '%s' of the document in the request body does not match the id '%s' in the request URI.", id, req.segs[5])
	}
	prev := c.get(pk, id)
	if prev == nil {
		return nil, errNotFound()
	}
	if !ifMatch(req.r.Header.Get("If-Match"), prev) {
		return nil, errPrecondition()
	}
	if e := c.checkUnique(pk, id, body); e != nil {
		return nil, e
	}
	before := c.lsn
	d := c.newDocument(st, id, pk, body, prev, s.Now().Unix())
	c.put(d)
	s.recordWrite(c, pk, before, undoEntry{pk: pk, id: id, prev: prev})
	return itemResponse(req, c, http.StatusOK, d, !prefersMinimal(req.r), writeCharge(len(d.raw))), nil
}

func (s *Server) deleteItem(req *request) (*response, *apiError) {
	st := s.st
	st.lock()
	defer st.unlock()
	c, e := st.container(req.segs[1], req.segs[3])
	if e != nil {
		return nil, e
	}
	pk, e := c.headerPK(req.r.Header.Get("x-ms-documentdb-partitionkey"))
	if e != nil {
		return nil, e
	}
	if e := urlItemIDError(req.segs[5]); e != nil {
		return nil, e
	}
	prev := c.get(pk, req.segs[5])
	if prev == nil {
		return nil, errNotFound()
	}
	if !ifMatch(req.r.Header.Get("If-Match"), prev) {
		return nil, errPrecondition()
	}
	before := c.lsn
	c.remove(pk, prev.id)
	c.lsn++
	s.recordWrite(c, pk, before, undoEntry{pk: pk, id: prev.id, prev: prev})
	resp := newResponse(http.StatusNoContent, nil)
	resp.header.Set("x-ms-session-token", sessionToken(c))
	resp.header.Set("lsn", strconv.FormatInt(c.lsn, 10))
	resp.charge = writeCharge(len(prev.raw))
	return resp, nil
}
