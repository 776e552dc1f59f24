package durable

// Optional values: duroxide's events and work items carry Rust's Option
// fields as pointers.

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// valueOf is *p, or "" for nil.
func valueOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
