package localcosmos

import (
	"fmt"
)

// Direct access to stored documents, for inspection and white-box tests:
// these bypass the REST API, authentication, the Interceptor and the
// counters.

// Documents returns copies of all documents of a container, system
// properties included, in creation order. Expired documents (time to live)
// are left out.
func (s *Server) Documents(db, coll string) ([]map[string]any, error) {
	st := s.st
	st.mu.RLock()
	defer st.mu.RUnlock()
	c, err := st.directContainer(db, coll)
	if err != nil {
		return nil, err
	}
	docs := c.live(c.all)
	out := make([]map[string]any, len(docs))
	for i, d := range docs {
		out[i] = deepCopy(d.body).(map[string]any)
	}
	return out, nil
}

// UpdateDocuments calls fn with a copy of every document of a container, in
// creation order, under the server's write lock (so it is atomic with
// respect to requests). fn may modify the document in place; returning false
// deletes it. A modified document is stored as if replaced: it gets a new
// _etag and _ts (other system properties are regenerated too), and it moves
// if fn changed its id or partition key. The server's own checks (size, id
// syntax, unique keys) are not applied, so a test can store data the service
// would refuse. If an id or partition key change collides with another
// document, UpdateDocuments stops with an error; changes already made stay.
func (s *Server) UpdateDocuments(db, coll string, fn func(doc map[string]any) (keep bool)) error {
	st := s.st
	if err := st.updateDocuments(s, db, coll, fn); err != nil {
		return err
	}
	return st.waitDurable()
}

func (st *store) updateDocuments(s *Server, db, coll string, fn func(doc map[string]any) (keep bool)) error {
	st.lock()
	defer st.unlock()
	c, err := st.directContainer(db, coll)
	if err != nil {
		return err
	}
	docs := c.live(c.all)
	now := s.Now().Unix()
	c.forgetLag()
	for _, d := range docs {
		body := deepCopy(d.body).(map[string]any)
		if !fn(body) {
			c.remove(d.pk, d.id)
			c.lsn++
			continue
		}
		if string(marshalJSON(body)) == string(d.raw) {
			continue
		}
		id, _ := body["id"].(string)
		if id == "" {
			return fmt.Errorf("localcosmos: UpdateDocuments: document %q lost its string id", d.id)
		}
		pk := pkKey(c.docPK(body))
		prev := d
		if id != d.id || pk != d.pk {
			if c.get(pk, id) != nil {
				return fmt.Errorf("localcosmos: UpdateDocuments: document (%s, %q) already exists", pk, id)
			}
			c.remove(d.pk, d.id)
			prev = nil
		}
		c.put(c.newDocument(st, id, pk, body, prev, now))
	}
	return nil
}

func (st *store) directContainer(db, coll string) (*container, error) {
	d := st.dbs[db]
	if d == nil {
		return nil, fmt.Errorf("localcosmos: database %q not found", db)
	}
	c := d.colls[coll]
	if c == nil {
		return nil, fmt.Errorf("localcosmos: container %q not found in database %q", coll, db)
	}
	return c, nil
}
