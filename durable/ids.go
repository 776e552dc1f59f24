package durable

import "strings"

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
