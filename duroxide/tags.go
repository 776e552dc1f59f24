package duroxide

import (
	"fmt"
	"sort"
)

// MaxWorkerTags is the most tags a TagFilter may name (duroxide's
// MAX_WORKER_TAGS).
const MaxWorkerTags = 5

// TagMode selects how a TagFilter matches an activity's tag.
type TagMode int

// The tag filter modes.
const (
	// TagDefaultOnly matches only untagged activities. It is the zero value.
	TagDefaultOnly TagMode = iota
	// TagTags matches only activities tagged with one of the filter's tags.
	TagTags
	// TagDefaultAnd matches untagged activities and the filter's tags.
	TagDefaultAnd
	// TagAny matches every activity.
	TagAny
	// TagNone matches nothing.
	TagNone
)

// TagFilter decides which activities a worker fetches. The zero value is
// DefaultOnly. Build the tag-carrying modes with Tags or DefaultAnd.
type TagFilter struct {
	Mode TagMode
	tags []string // sorted, unique
}

// DefaultOnly matches untagged activities only.
func DefaultOnly() TagFilter { return TagFilter{Mode: TagDefaultOnly} }

// AnyTag matches every activity.
func AnyTag() TagFilter { return TagFilter{Mode: TagAny} }

// NoTags matches nothing.
func NoTags() TagFilter { return TagFilter{Mode: TagNone} }

// Tags matches activities carrying one of tags. It returns an error for an
// empty list or more than MaxWorkerTags distinct tags.
func Tags(tags ...string) (TagFilter, error) { return newTagFilter(TagTags, tags) }

// DefaultAnd matches untagged activities and those carrying one of tags.
func DefaultAnd(tags ...string) (TagFilter, error) { return newTagFilter(TagDefaultAnd, tags) }

func newTagFilter(mode TagMode, tags []string) (TagFilter, error) {
	set := map[string]struct{}{}
	for _, t := range tags {
		set[t] = struct{}{}
	}
	if len(set) == 0 {
		return TagFilter{}, fmt.Errorf("duroxide: a tag filter needs at least one tag")
	}
	if len(set) > MaxWorkerTags {
		return TagFilter{}, fmt.Errorf("duroxide: a tag filter may name at most %d tags, got %d", MaxWorkerTags, len(set))
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return TagFilter{Mode: mode, tags: out}, nil
}

// TagList returns the filter's tags, sorted.
func (f TagFilter) TagList() []string { return append([]string(nil), f.tags...) }

// Matches reports whether an activity with tag (nil = untagged) matches.
func (f TagFilter) Matches(tag *string) bool {
	switch f.Mode {
	case TagAny:
		return true
	case TagNone:
		return false
	case TagDefaultOnly:
		return tag == nil
	case TagDefaultAnd:
		if tag == nil {
			return true
		}
	case TagTags:
		if tag == nil {
			return false
		}
	}
	for _, t := range f.tags {
		if t == *tag {
			return true
		}
	}
	return false
}
