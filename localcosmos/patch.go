package localcosmos

import (
	"net/http"
	"strconv"
	"strings"
)

// Partial document update (PATCH). Semantics follow
// https://learn.microsoft.com/azure/cosmos-db/partial-document-update and
// the error texts listed in its troubleshooting table.

// maxPatchOperations is the service's limit of operations in one patch.
const maxPatchOperations = 10

const msgPatchSyntax = "Invalid patch request: check syntax of patch specification."

type patchOp struct {
	op       string
	path     string
	segs     []string
	from     string
	fromSegs []string
	value    any
}

type patchSpec struct {
	condition string
	hasCond   bool
	ops       []patchOp
}

// parsePatch validates a patch body {"condition"?, "operations": [...]}.
func parsePatch(body map[string]any, c *container) (*patchSpec, *apiError) {
	spec := &patchSpec{}
	if cond, ok := body["condition"]; ok && cond != nil {
		s, ok := cond.(string)
		if !ok {
			return nil, errBadRequest(msgPatchSyntax)
		}
		spec.condition, spec.hasCond = s, true
	}
	rawOps, ok := body["operations"].([]any)
	if !ok || len(rawOps) == 0 {
		return nil, errBadRequest(msgPatchSyntax)
	}
	if len(rawOps) > maxPatchOperations {
		return nil, errBadRequest("The number of patch operations can't exceed %d.", maxPatchOperations)
	}
	for i, ro := range rawOps {
		m, ok := ro.(map[string]any)
		if !ok {
			return nil, errBadRequest(msgPatchSyntax)
		}
		var op patchOp
		op.op, _ = m["op"].(string)
		op.path, _ = m["path"].(string)
		switch op.op {
		case "add", "set", "replace", "remove", "incr", "move":
		default:
			return nil, errBadRequest(msgPatchSyntax)
		}
		segs, ok := pointerSegments(op.path)
		if !ok {
			return nil, errBadRequest(msgPatchSyntax)
		}
		op.segs = segs
		v, hasValue := m["value"]
		switch op.op {
		case "add", "set", "replace", "incr":
			if !hasValue {
				return nil, errBadRequest("The required property 'value' could not be found in patch request.")
			}
			op.value = v
		}
		if op.op == "incr" {
			if _, ok := v.(float64); !ok {
				return nil, errBadRequest("For Operation(%d): Increment operation requires a numeric value.", i)
			}
		}
		if op.op == "move" {
			op.from, _ = m["from"].(string)
			fs, ok := pointerSegments(op.from)
			if !ok {
				return nil, errBadRequest("The required property 'from' could not be found in patch request.")
			}
			op.fromSegs = fs
			if e := checkPatchTarget(op.fromSegs, op.from, c); e != nil {
				return nil, e
			}
			if len(op.fromSegs) < len(op.segs) && isPrefix(op.fromSegs, op.segs) {
				return nil, errBadRequest("For Operation(%d): Cannot move a node to its own child path '%s'.", i, op.path)
			}
		}
		if e := checkPatchTarget(op.segs, op.path, c); e != nil {
			return nil, e
		}
		spec.ops = append(spec.ops, op)
	}
	return spec, nil
}

func checkPatchTarget(segs []string, path string, c *container) *apiError {
	if len(segs) == 0 {
		return errBadRequest(msgPatchSyntax)
	}
	switch segs[0] {
	case "id", "_rid", "_self", "_etag", "_ts", "_attachments":
		return errBadRequest("Invalid patch request: Cannot patch system property '%s'.", segs[0])
	}
	if c.isPKPath(segs) {
		return errBadRequest("Invalid patch request: Cannot patch partition key path '%s'.", path)
	}
	return nil
}

func isPrefix(prefix, segs []string) bool {
	if len(prefix) > len(segs) {
		return false
	}
	for i := range prefix {
		if prefix[i] != segs[i] {
			return false
		}
	}
	return true
}

// pointerSegments splits a JSON-pointer-style path ("/a/b/0"), decoding ~1 and ~0.
func pointerSegments(p string) ([]string, bool) {
	if !strings.HasPrefix(p, "/") || len(p) < 2 {
		return nil, false
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		if s == "" {
			return nil, false
		}
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs, true
}

// applyPatch applies spec to a copy of doc and returns the new body.
func applyPatch(doc map[string]any, spec *patchSpec) (map[string]any, *apiError) {
	body := deepCopy(doc).(map[string]any)
	for i, op := range spec.ops {
		var e *apiError
		switch op.op {
		case "move":
			var v any
			v, e = patchRemove(body, op.fromSegs, op.from, i, "moved")
			if e == nil {
				e = patchWrite(body, op, v, "add", i)
			}
		case "remove":
			_, e = patchRemove(body, op.segs, op.path, i, "removed")
		default:
			e = patchWrite(body, op, op.value, op.op, i)
		}
		if e != nil {
			return nil, e
		}
	}
	return body, nil
}

// parentOf walks to the container holding the last segment.
func parentOf(body map[string]any, segs []string) (any, bool) {
	var cur any = body
	for _, s := range segs[:len(segs)-1] {
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[s]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			idx, err := strconv.Atoi(s)
			if err != nil || idx < 0 || idx >= len(t) {
				return nil, false
			}
			cur = t[idx]
		default:
			return nil, false
		}
	}
	switch cur.(type) {
	case map[string]any, []any:
		return cur, true
	}
	return nil, false
}

// setAt replaces the container at segs[:len-1] after an array changed length.
func setAt(body map[string]any, segs []string, v any) {
	if len(segs) == 0 {
		return
	}
	var cur any = body
	for _, s := range segs[:len(segs)-1] {
		switch t := cur.(type) {
		case map[string]any:
			cur = t[s]
		case []any:
			idx, _ := strconv.Atoi(s)
			cur = t[idx]
		}
	}
	last := segs[len(segs)-1]
	switch t := cur.(type) {
	case map[string]any:
		t[last] = v
	case []any:
		idx, _ := strconv.Atoi(last)
		t[idx] = v
	}
}

func patchWrite(body map[string]any, op patchOp, value any, kind string, i int) *apiError {
	segs := op.segs
	path := op.path
	parent, ok := parentOf(body, segs)
	if !ok {
		switch kind {
		case "replace":
			return errBadRequest("For Operation(%d): Node(%s) to be replaced is absent.", i, path)
		case "add":
			return errBadRequest("For Operation(%d): Add Operation can only create a child object of an existing node(array or object) and can't create path recursively, no path found beyond: '%s'.", i, parentPath(segs))
		default:
			return errBadRequest("For Operation(%d): Given Operation can only create a child object of an existing node(array or object) and can't create path recursively, no path found beyond: '%s'.", i, parentPath(segs))
		}
	}
	last := segs[len(segs)-1]
	value = deepCopy(value)
	switch p := parent.(type) {
	case map[string]any:
		cur, exists := p[last]
		switch kind {
		case "replace":
			if !exists {
				return errBadRequest("For Operation(%d): Node(%s) to be replaced is absent.", i, path)
			}
		case "incr":
			if exists {
				n, isNum := cur.(float64)
				if !isNum {
					return errBadRequest("For Operation(%d): Node(%s) isn't a number.", i, path)
				}
				value = n + value.(float64)
			}
		}
		p[last] = value
	case []any:
		idx, isIndex := arrayIndex(last, len(p), kind == "add" || kind == "set")
		if !isIndex {
			return errBadRequest("For Operation(%d): Index(%s) to operate on is out of array bounds.", i, last)
		}
		switch kind {
		case "add":
			p = append(p, nil)
			copy(p[idx+1:], p[idx:])
			p[idx] = value
			setAt(body, segs[:len(segs)-1], p)
		case "set", "replace":
			if idx == len(p) {
				if kind == "replace" {
					return errBadRequest("For Operation(%d): Index(%s) to operate on is out of array bounds.", i, last)
				}
				p = append(p, value)
				setAt(body, segs[:len(segs)-1], p)
			} else {
				p[idx] = value
			}
		case "incr":
			if idx >= len(p) {
				return errBadRequest("For Operation(%d): Index(%s) to operate on is out of array bounds.", i, last)
			}
			n, isNum := p[idx].(float64)
			if !isNum {
				return errBadRequest("For Operation(%d): Node(%s) isn't a number.", i, path)
			}
			p[idx] = n + value.(float64)
		}
	}
	return nil
}

func patchRemove(body map[string]any, segs []string, path string, i int, verb string) (any, *apiError) {
	absent := func() *apiError {
		if verb == "moved" {
			return errBadRequest("For Operation(%d): Node(%s) to be moved is absent.", i, path)
		}
		return errBadRequest("For Operation(%d): Node(%s) to be removed is absent. Note: it may also have been removed earlier in the transaction.", i, path)
	}
	parent, ok := parentOf(body, segs)
	if !ok {
		return nil, absent()
	}
	last := segs[len(segs)-1]
	switch p := parent.(type) {
	case map[string]any:
		v, exists := p[last]
		if !exists {
			return nil, absent()
		}
		delete(p, last)
		return v, nil
	case []any:
		idx, isIndex := arrayIndex(last, len(p), false)
		if !isIndex || idx >= len(p) {
			return nil, errBadRequest("For Operation(%d): Index(%s) to operate on is out of array bounds.", i, last)
		}
		v := p[idx]
		p = append(p[:idx:idx], p[idx+1:]...)
		setAt(body, segs[:len(segs)-1], p)
		return v, nil
	}
	return nil, absent()
}

// arrayIndex parses an array position; "-" means the end when allowed.
func arrayIndex(s string, n int, allowEnd bool) (int, bool) {
	if s == "-" {
		return n, allowEnd
	}
	idx, err := strconv.Atoi(s)
	if err != nil || idx < 0 || idx > n || (idx == n && !allowEnd) {
		return 0, false
	}
	return idx, true
}

func parentPath(segs []string) string {
	return "/" + strings.Join(segs[:len(segs)-1], "/")
}

// patchDocument applies a patch to the document (pk, id) of c: 404 when it
// is missing, 412 when ifMatchEtag or the condition fails, 400 for invalid
// operations, 413 when the result is too large. The caller holds the write lock.
func (s *Server) patchDocument(c *container, pk, id, ifMatchEtag string, spec *patchSpec) (*document, *apiError) {
	st := s.st
	prev := c.get(pk, id)
	if prev == nil {
		return nil, errNotFound()
	}
	if !ifMatch(ifMatchEtag, prev) {
		return nil, errPrecondition()
	}
	if spec.hasCond {
		ok, e := evalCondition(spec.condition, prev.body)
		if e != nil {
			return nil, e
		}
		if !ok {
			return nil, newError(http.StatusPreconditionFailed, msgPatchPrecondition)
		}
	}
	body, e := applyPatch(prev.body, spec)
	if e != nil {
		return nil, e
	}
	for _, k := range systemProperties {
		delete(body, k)
	}
	if n := len(marshalJSON(body)); n > maxDocumentSize {
		return nil, errTooLarge()
	}
	if e := c.checkUnique(pk, id, body); e != nil {
		return nil, e
	}
	d := c.newDocument(st, id, pk, body, prev, s.Now().Unix())
	c.put(d)
	return d, nil
}

func (s *Server) patchItem(req *request) (*response, *apiError) {
	raw, e := readJSONObject(req.body)
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
	pk, e := c.headerPK(req.r.Header.Get("x-ms-documentdb-partitionkey"))
	if e != nil {
		return nil, e
	}
	spec, e := parsePatch(raw, c)
	if e != nil {
		return nil, e
	}
	if e := urlItemIDError(req.segs[5]); e != nil {
		return nil, e
	}
	prev, before := c.get(pk, req.segs[5]), c.lsn
	d, e := s.patchDocument(c, pk, req.segs[5], req.r.Header.Get("If-Match"), spec)
	if e != nil {
		return nil, e
	}
	s.recordWrite(c, pk, before, undoEntry{pk: pk, id: d.id, prev: prev})
	return itemResponse(req, c, http.StatusOK, d, !prefersMinimal(req.r), writeCharge(len(d.raw))+float64(len(spec.ops))*0.2), nil
}
