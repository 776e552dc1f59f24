// Package claimcheck is the part of payload/blobstore and
// payload/filestore that does not depend on where large payloads are
// kept: the threshold, the tagged form of what Encode returns (inline
// bytes or a reference), the content-addressed names that make a retried
// write the same object, the integrity check on read, and a small cache of
// what was read. Each store supplies a Store that puts, gets and deletes
// by prefix.
package claimcheck
