package durable

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// A rewind request is judged after the messages before it: the turn
// takes those and carries the request and what follows it.
func TestCarryFromRewind(t *testing.T) {
	cancel := duroxide.CancelInstanceItem{Instance: "c", Reason: "parent canceled"}
	rewind := duroxide.RewindInstanceItem{Instance: "c", Reason: "parent rewound", ParentExecutionID: ptr(uint64(2))}
	redrive := duroxide.RedriveInstanceItem{Instance: "c", ExecutionID: 1}
	event := duroxide.ExternalRaisedItem{Instance: "c", Name: "go", Data: "d"}
	for _, tc := range []struct {
		name           string
		batch          []duroxide.WorkItem
		taken, carried []duroxide.WorkItem
	}{
		{"after a cancellation", []duroxide.WorkItem{cancel, rewind, event}, []duroxide.WorkItem{cancel}, []duroxide.WorkItem{rewind, event}},
		{"a re-drive after an event", []duroxide.WorkItem{event, redrive}, []duroxide.WorkItem{event}, []duroxide.WorkItem{redrive}},
		{"first in the batch", []duroxide.WorkItem{rewind, cancel}, []duroxide.WorkItem{rewind, cancel}, nil},
		{"none", []duroxide.WorkItem{cancel, event}, []duroxide.WorkItem{cancel, event}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tn := &turn{item: &duroxide.OrchestrationItem{Instance: "c", Messages: tc.batch}}
			tn.carryFromRewind()
			require.Equal(t, tc.taken, tn.item.Messages)
			require.Equal(t, tc.carried, tn.carried)
			if tc.carried != nil {
				tn.item.Messages = append(tn.item.Messages, event)
				require.Equal(t, tc.carried, tn.carried, "appending to the taken messages leaves the carried ones")
			}
		})
	}
}

// A turn that carries its parent's rewind request does not report its
// end to the execution that request names (a child started without a
// parent execution reports to the parent's current one): the rewound
// child reports there instead. Other reports, and reports of turns
// carrying no such request, go out.
func TestReportToRewoundParentIsWithheld(t *testing.T) {
	failed := duroxide.SubOrchFailedItem{ParentInstance: "p", ParentExecutionID: 2, ParentID: 2,
		Details: duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppCancelled, Reason: "parent canceled"}}}
	completed := duroxide.SubOrchCompletedItem{ParentInstance: "p", ParentExecutionID: 2, ParentID: 2, Result: "r"}
	toOlder := duroxide.SubOrchFailedItem{ParentInstance: "p", ParentExecutionID: 1, ParentID: 2}
	grandchild := duroxide.CancelInstanceItem{Instance: "g", Reason: "parent canceled"}
	rewind := duroxide.RewindInstanceItem{Instance: "c", Reason: "parent rewound", ParentExecutionID: ptr(uint64(2))}
	for _, tc := range []struct {
		name          string
		orch, carried []duroxide.WorkItem
		want          []duroxide.WorkItem
	}{
		{"failure", []duroxide.WorkItem{grandchild, failed}, []duroxide.WorkItem{rewind}, []duroxide.WorkItem{grandchild}},
		{"completion", []duroxide.WorkItem{completed}, []duroxide.WorkItem{rewind}, []duroxide.WorkItem{}},
		{"to an older execution", []duroxide.WorkItem{toOlder}, []duroxide.WorkItem{rewind}, []duroxide.WorkItem{toOlder}},
		{"a user's rewind", []duroxide.WorkItem{failed}, []duroxide.WorkItem{duroxide.RewindInstanceItem{Instance: "c", ExecutionID: 1}},
			[]duroxide.WorkItem{failed}},
		{"a re-drive", []duroxide.WorkItem{failed}, []duroxide.WorkItem{duroxide.RedriveInstanceItem{Instance: "c", ExecutionID: 1}},
			[]duroxide.WorkItem{failed}},
		{"nothing carried", []duroxide.WorkItem{failed}, nil, []duroxide.WorkItem{failed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tn := &turn{instance: "c", orch: tc.orch, carried: tc.carried}
			tn.withholdReportToRewoundParent()
			require.Equal(t, tc.want, tn.orch)
		})
	}
}
