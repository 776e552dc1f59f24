package localcosmos

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Databases, containers, partition key ranges and throughput offers.

func resourceID(body map[string]any) (string, *apiError) {
	v, ok := body["id"]
	if !ok {
		return "", errBadRequest(msgIDMissing)
	}
	id, ok := v.(string)
	if !ok {
		return "", errBadRequest(msgIDMissing)
	}
	if e := validateID(id); e != nil {
		return "", e
	}
	return id, nil
}

func (s *Server) createDatabase(req *request) (*response, *apiError) {
	body, e := readJSONObject(req.body)
	if e != nil {
		return nil, e
	}
	id, e := resourceID(body)
	if e != nil {
		return nil, e
	}
	offer, e := offerFromHeaders(req.r)
	if e != nil {
		return nil, e
	}
	st := s.st
	st.lock()
	defer st.unlock()
	if st.dbs[id] != nil {
		return nil, errConflict()
	}
	st.dbSeq++
	db := newDatabaseAt(st, id, st.dbSeq)
	st.catalogChanged()
	ts := s.Now().Unix()
	db.body = map[string]any{
		"id": id, "_rid": db.rid, "_self": "dbs/" + db.rid + "/", "_etag": st.nextETag(ts),
		"_colls": "colls/", "_users": "users/", "_ts": float64(ts),
	}
	db.raw = marshalJSON(db.body)
	if offer != nil {
		db.offer = st.newOffer(offer, "dbs/"+db.rid+"/", db.rid, ts)
	}
	st.dbs[id] = db
	resp := newResponse(http.StatusCreated, db.raw)
	resp.header.Set("etag", db.body["_etag"].(string))
	resp.charge = 4.95
	return resp, nil
}

func (s *Server) readDatabase(req *request) (*response, *apiError) {
	st := s.st
	st.mu.RLock()
	defer st.mu.RUnlock()
	db, e := st.database(req.segs[1])
	if e != nil {
		return nil, e
	}
	resp := newResponse(http.StatusOK, db.raw)
	resp.header.Set("etag", db.body["_etag"].(string))
	resp.charge = 1
	return resp, nil
}

func (s *Server) deleteDatabase(req *request) (*response, *apiError) {
	st := s.st
	st.lock()
	defer st.unlock()
	db, e := st.database(req.segs[1])
	if e != nil {
		return nil, e
	}
	if m := req.r.Header.Get("If-Match"); m != "" && m != "*" && m != db.body["_etag"] {
		return nil, errPrecondition()
	}
	delete(st.dbs, db.id)
	st.catalogChanged()
	resp := newResponse(http.StatusNoContent, nil)
	resp.charge = 4.95
	return resp, nil
}

// containerSpec is a validated container definition.
type containerSpec struct {
	body       map[string]any
	pk         pkDefinition
	uniqueKeys [][][]string
	defaultTTL *int64
}

func parseContainerSpec(body map[string]any) (*containerSpec, *apiError) {
	spec := &containerSpec{body: body}
	rawPK, _ := body["partitionKey"].(map[string]any)
	var paths []string
	if rawPK != nil {
		if ps, ok := rawPK["paths"].([]any); ok {
			for _, p := range ps {
				ps, ok := p.(string)
				if !ok {
					return nil, errBadRequest("The partition key path must be a string.")
				}
				paths = append(paths, ps)
			}
		}
	}
	if len(paths) == 0 {
		return nil, errBadRequest("A partition key definition with at least one path is required. cosmostest does not support non-partitioned containers.")
	}
	kind, _ := rawPK["kind"].(string)
	switch kind {
	case "":
		kind = "Hash"
		if len(paths) > 1 {
			kind = "MultiHash"
		}
	case "Hash", "MultiHash":
	default:
		return nil, errBadRequest("The partition key kind '%s' is invalid.", kind)
	}
	if kind == "Hash" && len(paths) != 1 {
		return nil, errBadRequest("Partition key kind 'Hash' supports exactly one path; use 'MultiHash' for hierarchical partition keys.")
	}
	if len(paths) > 3 {
		return nil, errBadRequest("Hierarchical partition keys support at most 3 paths.")
	}
	rawPK["kind"] = kind
	if v, ok := rawPK["version"]; ok {
		f, _ := v.(float64)
		if f != 1 && f != 2 {
			return nil, errBadRequest("The partition key version '%v' is invalid.", v)
		}
		if kind == "MultiHash" && f != 2 {
			return nil, errBadRequest("Hierarchical partition keys require partition key version 2.")
		}
	} else if kind == "MultiHash" {
		rawPK["version"] = float64(2)
	}
	spec.pk.kind = kind
	for _, p := range paths {
		segs, ok := splitPath(p)
		if !ok {
			return nil, errBadRequest("The partition key component definition path '%s' could not be accepted, failed near position 0. Partition key paths must contain only valid characters and not contain a trailing slash or wildcard character.", p)
		}
		spec.pk.paths = append(spec.pk.paths, p)
		spec.pk.segs = append(spec.pk.segs, segs)
	}
	// Unique keys.
	if ukp, ok := body["uniqueKeyPolicy"].(map[string]any); ok {
		keys, _ := ukp["uniqueKeys"].([]any)
		for _, k := range keys {
			km, _ := k.(map[string]any)
			ps, _ := km["paths"].([]any)
			var segsList [][]string
			for _, p := range ps {
				pstr, _ := p.(string)
				segs, ok := splitPath(pstr)
				if !ok {
					return nil, errBadRequest("The unique key path '%v' is invalid.", p)
				}
				segsList = append(segsList, segs)
			}
			if len(segsList) == 0 {
				return nil, errBadRequest("A unique key must have at least one path.")
			}
			spec.uniqueKeys = append(spec.uniqueKeys, segsList)
		}
	} else {
		body["uniqueKeyPolicy"] = map[string]any{"uniqueKeys": []any{}}
	}
	if v, ok := body["defaultTtl"]; ok && v != nil {
		f, isNum := v.(float64)
		if !isNum || f != float64(int64(f)) || (f <= 0 && f != -1) {
			return nil, errBadRequest("The value of defaultTtl '%v' is invalid. It must be -1 or a positive integer.", v)
		}
		n := int64(f)
		spec.defaultTTL = &n
	}
	// Defaults the service fills in.
	ip, ok := body["indexingPolicy"].(map[string]any)
	if !ok {
		ip = map[string]any{"indexingMode": "consistent", "automatic": true}
		body["indexingPolicy"] = ip
	}
	if m, ok := ip["indexingMode"].(string); ok {
		ip["indexingMode"] = strings.ToLower(m)
	} else {
		ip["indexingMode"] = "consistent"
	}
	if _, ok := ip["automatic"]; !ok {
		ip["automatic"] = true
	}
	if _, ok := ip["includedPaths"]; !ok {
		ip["includedPaths"] = []any{map[string]any{"path": "/*"}}
	}
	excluded, _ := ip["excludedPaths"].([]any)
	hasEtag := false
	for _, x := range excluded {
		if xm, ok := x.(map[string]any); ok && xm["path"] == `/"_etag"/?` {
			hasEtag = true
		}
	}
	if !hasEtag {
		excluded = append(excluded, map[string]any{"path": `/"_etag"/?`})
	}
	ip["excludedPaths"] = excluded
	if _, ok := body["conflictResolutionPolicy"]; !ok {
		body["conflictResolutionPolicy"] = map[string]any{"mode": "LastWriterWins", "conflictResolutionPath": "/_ts", "conflictResolutionProcedure": ""}
	}
	if _, ok := body["geospatialConfig"]; !ok {
		body["geospatialConfig"] = map[string]any{"type": "Geography"}
	}
	return spec, nil
}

func (s *Server) createContainer(req *request) (*response, *apiError) {
	body, e := readJSONObject(req.body)
	if e != nil {
		return nil, e
	}
	id, e := resourceID(body)
	if e != nil {
		return nil, e
	}
	spec, e := parseContainerSpec(body)
	if e != nil {
		return nil, e
	}
	offer, e := offerFromHeaders(req.r)
	if e != nil {
		return nil, e
	}
	st := s.st
	st.lock()
	defer st.unlock()
	db := st.dbs[req.segs[1]]
	if db == nil {
		return nil, errOwnerNotFound()
	}
	if db.colls[id] != nil {
		return nil, errConflict()
	}
	db.collSeq++
	c := newContainerAt(db, id, db.collSeq)
	st.catalogChanged()
	ts := s.Now().Unix()
	c.applySpec(st, spec, ts)
	if offer != nil {
		c.offer = st.newOffer(offer, "dbs/"+db.rid+"/colls/"+c.rid+"/", c.rid, ts)
	}
	db.colls[id] = c
	resp := newResponse(http.StatusCreated, c.raw)
	resp.header.Set("etag", c.body["_etag"].(string))
	resp.charge = 4.95
	return resp, nil
}

func (c *container) applySpec(st *store, spec *containerSpec, ts int64) {
	body := spec.body
	body["_rid"] = c.rid
	body["_self"] = "dbs/" + c.db.rid + "/colls/" + c.rid + "/"
	body["_etag"] = st.nextETag(ts)
	body["_ts"] = float64(ts)
	body["_docs"] = "docs/"
	body["_sprocs"] = "sprocs/"
	body["_triggers"] = "triggers/"
	body["_udfs"] = "udfs/"
	body["_conflicts"] = "conflicts/"
	c.body = body
	c.raw = marshalJSON(body)
	c.pk = spec.pk
	c.uniqueKeys = spec.uniqueKeys
	c.defaultTTL = spec.defaultTTL
}

// lookupContainer finds the container a container-level request addresses.
func (st *store) lookupContainer(req *request) (*container, *apiError) {
	db := st.dbs[req.segs[1]]
	if db == nil {
		return nil, newSubError(http.StatusNotFound, subOwnerNotFound, msgResourceNotFound)
	}
	c := db.colls[req.segs[3]]
	if c == nil {
		return nil, newError(http.StatusNotFound, msgResourceNotFound)
	}
	return c, nil
}

func (s *Server) readContainer(req *request) (*response, *apiError) {
	st := s.st
	st.mu.RLock()
	defer st.mu.RUnlock()
	c, e := st.lookupContainer(req)
	if e != nil {
		return nil, e
	}
	resp := newResponse(http.StatusOK, c.raw)
	resp.header.Set("etag", c.body["_etag"].(string))
	resp.charge = 1
	return resp, nil
}

func (s *Server) replaceContainer(req *request) (*response, *apiError) {
	body, e := readJSONObject(req.body)
	if e != nil {
		return nil, e
	}
	id, e := resourceID(body)
	if e != nil {
		return nil, e
	}
	if id != req.segs[3] {
		return nil, errBadRequest("The id of the container in the request body does not match the one in the request URI.")
	}
	spec, e := parseContainerSpec(body)
	if e != nil {
		return nil, e
	}
	st := s.st
	st.lock()
	defer st.unlock()
	c, e := st.lookupContainer(req)
	if e != nil {
		return nil, e
	}
	if m := req.r.Header.Get("If-Match"); m != "" && m != "*" && m != c.body["_etag"] {
		return nil, errPrecondition()
	}
	if strings.Join(spec.pk.paths, ",") != strings.Join(c.pk.paths, ",") || spec.pk.kind != c.pk.kind {
		return nil, errBadRequest("Document collection partition key cannot be changed.")
	}
	if !jsonEqual(spec.body["uniqueKeyPolicy"], c.body["uniqueKeyPolicy"]) {
		return nil, errBadRequest("Unique key policy cannot be changed.")
	}
	c.applySpec(st, spec, s.Now().Unix())
	st.catalogChanged()
	resp := newResponse(http.StatusOK, c.raw)
	resp.header.Set("etag", c.body["_etag"].(string))
	resp.charge = 4.95
	return resp, nil
}

func jsonEqual(a, b any) bool { return string(marshalJSON(a)) == string(marshalJSON(b)) }

func (s *Server) deleteContainer(req *request) (*response, *apiError) {
	st := s.st
	st.lock()
	defer st.unlock()
	c, e := st.lookupContainer(req)
	if e != nil {
		return nil, e
	}
	if m := req.r.Header.Get("If-Match"); m != "" && m != "*" && m != c.body["_etag"] {
		return nil, errPrecondition()
	}
	delete(c.db.colls, c.id)
	st.catalogChanged()
	resp := newResponse(http.StatusNoContent, nil)
	resp.charge = 4.95
	return resp, nil
}

// pkRangesETag is the change-feed ETag of the single partition key range;
// it never changes because the server never splits.
const pkRangesETag = `"1"`

// readPartitionKeyRanges answers GET .../pkranges with one physical range
// covering the whole key space (range id "0"). The SDK reads it as a change
// feed; a request with If-None-Match of the current ETag gets 304.
func (s *Server) readPartitionKeyRanges(req *request) (*response, *apiError) {
	st := s.st
	st.mu.RLock()
	defer st.mu.RUnlock()
	c, e := st.lookupContainer(req)
	if e != nil {
		return nil, e
	}
	if req.r.Header.Get("If-None-Match") == pkRangesETag {
		resp := newResponse(http.StatusNotModified, nil)
		resp.header.Set("etag", pkRangesETag)
		resp.charge = 1
		return resp, nil
	}
	rangeRID := base64.StdEncoding.EncodeToString(append(c.ridRaw[:], 2, 0, 0, 0, 0, 0, 0, 0x50))
	ts, _ := c.body["_ts"].(float64)
	body := map[string]any{
		"_rid": c.rid,
		"PartitionKeyRanges": []any{map[string]any{
			"_rid": rangeRID, "id": "0", "_etag": `"00000000-0000-0000-0000-000000000000"`,
			"minInclusive": "", "maxExclusive": "FF", "ridPrefix": 0,
			"_self":              "dbs/" + c.db.rid + "/colls/" + c.rid + "/pkranges/" + rangeRID + "/",
			"throughputFraction": 1, "status": "online", "parents": []any{}, "ownedArchivalPKRangeIds": []any{},
			"_ts": ts, "lsn": c.lsn,
		}},
		"_count": 1,
	}
	resp := newResponse(http.StatusOK, marshalJSON(body))
	resp.header.Set("etag", pkRangesETag)
	resp.header.Set("x-ms-item-count", "1")
	resp.charge = 1
	return resp, nil
}

// offerFromHeaders reads the throughput a create request provisions.
func offerFromHeaders(r *http.Request) (map[string]any, *apiError) {
	if v := r.Header.Get("x-ms-offer-throughput"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 400 {
			return nil, errBadRequest("The offer throughput provided is invalid. The minimum throughput is 400 RU/s.")
		}
		return map[string]any{"offerThroughput": float64(n)}, nil
	}
	if v := r.Header.Get("x-ms-cosmos-offer-autopilot-settings"); v != "" {
		var as map[string]any
		if err := json.Unmarshal([]byte(v), &as); err != nil {
			return nil, errBadRequest("The autopilot settings provided are invalid.")
		}
		max, _ := as["maxThroughput"].(float64)
		if max < 1000 {
			return nil, errBadRequest("The autoscale max throughput provided is invalid. The minimum is 1000 RU/s.")
		}
		return map[string]any{"offerThroughput": max / 10, "offerAutopilotSettings": as}, nil
	}
	return nil, nil
}

// newOffer creates the offer resource for a database or container.
func (st *store) newOffer(content map[string]any, resource, resourceRID string, ts int64) map[string]any {
	st.etagSeq++
	var raw [4]byte
	binary.BigEndian.PutUint32(raw[:], uint32(st.etagSeq))
	rid := strings.TrimRight(base64.StdEncoding.EncodeToString(raw[:]), "=")
	return map[string]any{
		"resource": resource, "offerType": "Invalid", "offerResourceId": resourceRID, "offerVersion": "V2",
		"content": content, "id": rid, "_rid": rid, "_self": "offers/" + rid + "/",
		"_etag": st.nextETag(ts), "_ts": float64(ts),
	}
}

// offerSlots lists every offer in the account, as pointers to the field
// holding it, so that a replace can swap in a new map: offer maps are never
// modified once stored, so readers may use them after releasing the lock.
func (st *store) offerSlots() []*map[string]any {
	var out []*map[string]any
	for _, db := range st.dbs {
		if db.offer != nil {
			out = append(out, &db.offer)
		}
		for _, c := range db.colls {
			if c.offer != nil {
				out = append(out, &c.offer)
			}
		}
	}
	return out
}

// allOffers lists every offer in the account.
func (st *store) allOffers() []map[string]any {
	var out []map[string]any
	for _, slot := range st.offerSlots() {
		out = append(out, *slot)
	}
	return out
}

func (st *store) findOffer(rid string) *map[string]any {
	for _, slot := range st.offerSlots() {
		if strings.EqualFold((*slot)["_rid"].(string), rid) {
			return slot
		}
	}
	return nil
}

func (s *Server) readOffer(req *request) (*response, *apiError) {
	st := s.st
	st.mu.RLock()
	defer st.mu.RUnlock()
	slot := st.findOffer(req.segs[1])
	if slot == nil {
		return nil, newError(http.StatusNotFound, msgResourceNotFound)
	}
	o := *slot
	resp := newResponse(http.StatusOK, marshalJSON(o))
	resp.header.Set("etag", o["_etag"].(string))
	resp.charge = 1
	return resp, nil
}

func (s *Server) replaceOffer(req *request) (*response, *apiError) {
	body, e := readJSONObject(req.body)
	if e != nil {
		return nil, e
	}
	content, ok := body["content"].(map[string]any)
	if !ok {
		return nil, errBadRequest("The offer content is missing.")
	}
	st := s.st
	st.lock()
	defer st.unlock()
	slot := st.findOffer(req.segs[1])
	if slot == nil {
		return nil, newError(http.StatusNotFound, msgResourceNotFound)
	}
	o := make(map[string]any, len(*slot))
	for k, v := range *slot {
		o[k] = v
	}
	if m := req.r.Header.Get("If-Match"); m != "" && m != "*" && m != o["_etag"] {
		return nil, errPrecondition()
	}
	if as, ok := content["offerAutopilotSettings"].(map[string]any); ok {
		if max, _ := as["maxThroughput"].(float64); max > 0 {
			content["offerThroughput"] = max / 10
		}
	}
	ts := s.Now().Unix()
	o["content"] = content
	o["_etag"] = st.nextETag(ts)
	o["_ts"] = float64(ts)
	*slot = o
	st.catalogChanged()
	resp := newResponse(http.StatusOK, marshalJSON(o))
	resp.header.Set("etag", o["_etag"].(string))
	resp.charge = 1
	return resp, nil
}
