package durable

// Optional values: the optional fields of duroxide's events and work
// items are pointers, nil for absent (Rust: Option).

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// valueOf is *p, or "" for nil.
func valueOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
