package localcosmos

import (
	"encoding/json"
	"net/http"
)

// Transactional batch: POST .../docs with x-ms-cosmos-is-batch-request.
// The body is a JSON array of operations; the partition key comes only from
// the x-ms-documentdb-partitionkey header. The batch runs under the store's
// write lock, so it is atomic and isolated: either every operation applies
// or none does, and no reader sees part of it.

// maxBatchOperations is the service's limit of operations per batch.
const maxBatchOperations = 100

type batchOp struct {
	OperationType string          `json:"operationType"`
	ID            *string         `json:"id"`
	IfMatch       string          `json:"ifMatch"`
	ResourceBody  json.RawMessage `json:"resourceBody"`
}

type batchResult struct {
	StatusCode    int             `json:"statusCode"`
	SubStatusCode int             `json:"subStatusCode,omitempty"`
	RequestCharge float64         `json:"requestCharge"`
	ETag          string          `json:"eTag,omitempty"`
	ResourceBody  json.RawMessage `json:"resourceBody,omitempty"`
}

// undoEntry restores the document (pk, id) to prev (nil: absent).
type undoEntry struct {
	pk, id string
	prev   *document
}

func (s *Server) batch(req *request) (*response, *apiError) {
	if len(req.body) > maxDocumentSize {
		return nil, errTooLarge()
	}
	var ops []batchOp
	if err := decodeJSON(req.body, &ops); err != nil {
		return nil, errBadRequest(msgInvalidPayload)
	}
	if len(ops) == 0 {
		return nil, errBadRequest(msgBatchEmpty)
	}
	if len(ops) > maxBatchOperations {
		return nil, errBadRequest(msgBatchTooMany)
	}
	for _, op := range ops {
		switch op.OperationType {
		case "Create", "Upsert", "Replace", "Delete", "Read", "Patch":
		default:
			return nil, errBadRequest("The operation type '%s' is not supported in a batch request.", op.OperationType)
		}
	}
	if v := req.r.Header.Get("x-ms-cosmos-batch-atomic"); v != "" && !headerTrue(req.r, "x-ms-cosmos-batch-atomic") {
		return nil, errBadRequest("cosmostest supports only atomic batches (x-ms-cosmos-batch-atomic: True).")
	}
	minimal := prefersMinimal(req.r)
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
	savedLSN := c.lsn
	var undo []undoEntry
	results := make([]batchResult, 0, len(ops))
	total := 0.0
	for i, op := range ops {
		res, u, e := s.batchOne(c, pk, op, minimal)
		if e != nil {
			for j := len(undo) - 1; j >= 0; j-- {
				u := undo[j]
				if u.prev == nil {
					c.remove(u.pk, u.id)
				} else {
					c.put(u.prev)
				}
			}
			c.lsn = savedLSN
			failed := make([]batchResult, len(ops))
			for j := range failed {
				failed[j] = batchResult{StatusCode: http.StatusFailedDependency}
			}
			failed[i] = batchResult{StatusCode: e.Status, SubStatusCode: e.SubStatus, RequestCharge: 1.24}
			resp := newResponse(http.StatusMultiStatus, marshalJSON(failed))
			resp.header.Set("x-ms-session-token", sessionToken(c))
			resp.charge = total + 1.24
			return resp, nil
		}
		if u != nil {
			undo = append(undo, *u)
		}
		total += res.RequestCharge
		results = append(results, res)
	}
	s.recordWrite(c, pk, savedLSN, undo...)
	resp := newResponse(http.StatusOK, marshalJSON(results))
	for _, r := range results {
		if len(r.ResourceBody) > 0 {
			resp.docs++
		}
	}
	resp.header.Set("x-ms-session-token", sessionToken(c))
	resp.charge = total
	return resp, nil
}

// batchOne executes one operation of a batch in partition pk.
func (s *Server) batchOne(c *container, pk string, op batchOp, minimal bool) (batchResult, *undoEntry, *apiError) {
	st := s.st
	var res batchResult
	opID := func() (string, *apiError) {
		if op.ID == nil {
			return "", errBadRequest(msgIDMissing)
		}
		return *op.ID, nil
	}
	body := func() (map[string]any, string, *apiError) {
		if len(op.ResourceBody) == 0 {
			return nil, "", errBadRequest(msgInvalidPayload)
		}
		b, id, e := parseItemBody(op.ResourceBody)
		if e != nil {
			return nil, "", e
		}
		if pkKey(c.docPK(b)) != pk {
			return nil, "", newSubError(http.StatusBadRequest, subPKMismatch, msgPKMismatch)
		}
		return b, id, nil
	}
	written := func(status int, d *document) batchResult {
		r := batchResult{StatusCode: status, RequestCharge: writeCharge(len(d.raw)), ETag: d.etag}
		if !minimal {
			r.ResourceBody = d.raw
		}
		return r
	}
	now := s.Now().Unix()
	switch op.OperationType {
	case "Create", "Upsert":
		b, id, e := body()
		if e != nil {
			return res, nil, e
		}
		prev := c.get(pk, id)
		status := http.StatusCreated
		if prev != nil {
			if op.OperationType == "Create" {
				return res, nil, errConflict()
			}
			if !ifMatch(op.IfMatch, prev) {
				return res, nil, errPrecondition()
			}
			status = http.StatusOK
		}
		if e := c.checkUnique(pk, id, b); e != nil {
			return res, nil, e
		}
		d := c.newDocument(st, id, pk, b, prev, now)
		c.put(d)
		return written(status, d), &undoEntry{pk: pk, id: id, prev: prev}, nil
	case "Replace":
		id, e := opID()
		if e != nil {
			return res, nil, e
		}
		b, bodyID, e := body()
		if e != nil {
			return res, nil, e
		}
		if bodyID != id {
			return res, nil, errBadRequest("The id '%s' of the document in the request body does not match the id '%s' of the operation.", bodyID, id)
		}
		prev := c.get(pk, id)
		if prev == nil {
			return res, nil, errNotFound()
		}
		if !ifMatch(op.IfMatch, prev) {
			return res, nil, errPrecondition()
		}
		if e := c.checkUnique(pk, id, b); e != nil {
			return res, nil, e
		}
		d := c.newDocument(st, id, pk, b, prev, now)
		c.put(d)
		return written(http.StatusOK, d), &undoEntry{pk: pk, id: id, prev: prev}, nil
	case "Delete":
		id, e := opID()
		if e != nil {
			return res, nil, e
		}
		prev := c.get(pk, id)
		if prev == nil {
			return res, nil, errNotFound()
		}
		if !ifMatch(op.IfMatch, prev) {
			return res, nil, errPrecondition()
		}
		c.remove(pk, id)
		c.lsn++
		return batchResult{StatusCode: http.StatusNoContent, RequestCharge: writeCharge(len(prev.raw))}, &undoEntry{pk: pk, id: id, prev: prev}, nil
	case "Read":
		id, e := opID()
		if e != nil {
			return res, nil, e
		}
		d := c.get(pk, id)
		if d == nil {
			return res, nil, errNotFound()
		}
		r := batchResult{StatusCode: http.StatusOK, RequestCharge: readCharge(len(d.raw)), ETag: d.etag}
		if !minimal {
			r.ResourceBody = d.raw
		}
		return r, nil, nil
	case "Patch":
		id, e := opID()
		if e != nil {
			return res, nil, e
		}
		var raw map[string]any
		if err := decodeJSON(op.ResourceBody, &raw); err != nil || raw == nil {
			return res, nil, errBadRequest(msgPatchSyntax)
		}
		spec, e := parsePatch(raw, c)
		if e != nil {
			return res, nil, e
		}
		prev := c.get(pk, id)
		d, e := s.patchDocument(c, pk, id, op.IfMatch, spec)
		if e != nil {
			return res, nil, e
		}
		return written(http.StatusOK, d), &undoEntry{pk: pk, id: id, prev: prev}, nil
	}
	return res, nil, errBadRequest("The operation type '%s' is not supported in a batch request.", op.OperationType)
}
