package durable

import (
	"fmt"
	"strconv"
	"strings"
)

// initialExecutionID is the execution id of a fresh instance.
const initialExecutionID = 1

// childInstanceID is the full id of a child: auto-generated ids are
// prefixed with the parent ("{parent}::sub::5"), explicit ids are used as
// given.
func childInstanceID(parent, child string) string {
	if strings.HasPrefix(child, subOrchAutoPrefix) {
		return parent + "::" + child
	}
	return child
}

// The pending note on an activity no runtime has registered, which the
// dispatcher writes and the client reads.

// activityNotePrefix starts a pending note about an activity: the prefix,
// "<execution>/<activity id>: ", then the text a client shows.
const activityNotePrefix = "activity "

// activityNote is the pending note about activity id of execution that
// shows text.
func activityNote(execution, id uint64, text string) string {
	return fmt.Sprintf("%s%d/%d: %s", activityNotePrefix, execution, id, text)
}

// parseActivityNote splits a note activityNote wrote; ok is false for any
// other note.
func parseActivityNote(note string) (execution, id uint64, text string, ok bool) {
	rest, found := strings.CutPrefix(note, activityNotePrefix)
	if !found {
		return 0, 0, "", false
	}
	ids, text, found := strings.Cut(rest, ": ")
	if !found {
		return 0, 0, "", false
	}
	ex, act, found := strings.Cut(ids, "/")
	if !found {
		return 0, 0, "", false
	}
	var err1, err2 error
	execution, err1 = strconv.ParseUint(ex, 10, 64)
	id, err2 = strconv.ParseUint(act, 10, 64)
	return execution, id, text, err1 == nil && err2 == nil
}
