package providertest

import (
	"slices"
	"testing"
)

// The suite is the 221 behaviours of duroxide 0.1.29 in 19 modules plus
// eight Go additions, blocked_instances (5), heartbeats (4), held_messages (7),
// instance_fetch (3), instance_search (8), lifecycle (15),
// signal_with_start (4) and work_handoff (3), each named once, with a reason for every
// behaviour that can be left out.
func TestModulesTable(t *testing.T) {
	if len(modules) != 27 {
		t.Fatalf("%d modules, want 27", len(modules))
	}
	if !slices.IsSorted(Modules()) {
		t.Errorf("modules are not in sorted order: %v", Modules())
	}
	total := 0
	seen := map[string]bool{}
	for _, m := range modules {
		if seen[m.name] {
			t.Errorf("module %q listed twice", m.name)
		}
		seen[m.name] = true
		names := map[string]bool{}
		for _, tc := range m.tests {
			total++
			if tc.Name == "" || tc.Func == nil {
				t.Errorf("module %q has a test without a name or func", m.name)
			}
			if names[tc.Name] {
				t.Errorf("test %s/%s listed twice", m.name, tc.Name)
			}
			names[tc.Name] = true
			if tc.Applies != nil && tc.LeftOut == "" {
				t.Errorf("test %s/%s can be left out without a reason", m.name, tc.Name)
			}
		}
	}
	if total != 270 {
		t.Errorf("%d behaviours, want 270", total)
	}
}
