package duroxide

import (
	"reflect"
	"testing"
)

func TestTagFilterConstructors(t *testing.T) {
	for _, mk := range []func(...string) (TagFilter, error){Tags, DefaultAnd} {
		if _, err := mk(); err == nil {
			t.Error("empty tag list accepted")
		}
		if _, err := mk("a", "b", "c", "d", "e", "f"); err == nil {
			t.Error("6 tags accepted")
		}
		f, err := mk("e", "d", "c", "b", "a", "a", "e")
		if err != nil {
			t.Fatalf("5 distinct tags (with duplicates): %v", err)
		}
		if got := f.TagList(); !reflect.DeepEqual(got, []string{"a", "b", "c", "d", "e"}) {
			t.Errorf("TagList = %v", got)
		}
		// TagList returns a copy.
		f.TagList()[0] = "zzz"
		if f.TagList()[0] != "a" {
			t.Error("TagList aliases the filter")
		}
	}
	if f, _ := Tags("gpu"); f.Mode != TagTags {
		t.Errorf("Tags mode = %v", f.Mode)
	}
	if f, _ := DefaultAnd("gpu"); f.Mode != TagDefaultAnd {
		t.Errorf("DefaultAnd mode = %v", f.Mode)
	}
	if DefaultOnly().Mode != TagDefaultOnly || AnyTag().Mode != TagAny || NoTags().Mode != TagNone {
		t.Error("constructor modes")
	}
	if (TagFilter{}).Mode != TagDefaultOnly {
		t.Error("zero value is not DefaultOnly")
	}
}

func TestTagFilterMatches(t *testing.T) {
	gpu, cpu, empty := ptr("gpu"), ptr("cpu"), ptr("")
	tags, _ := Tags("gpu", "")
	defAnd, _ := DefaultAnd("gpu")
	cases := []struct {
		name   string
		filter TagFilter
		tag    *string
		want   bool
	}{
		{"default-only untagged", DefaultOnly(), nil, true},
		{"default-only tagged", DefaultOnly(), gpu, false},
		{"zero value untagged", TagFilter{}, nil, true},
		{"zero value tagged", TagFilter{}, gpu, false},
		{"tags untagged", tags, nil, false},
		{"tags member", tags, gpu, true},
		{"tags empty-string member", tags, empty, true},
		{"tags non-member", tags, cpu, false},
		{"default-and untagged", defAnd, nil, true},
		{"default-and member", defAnd, gpu, true},
		{"default-and non-member", defAnd, cpu, false},
		{"default-and empty string is a tag", defAnd, empty, false},
		{"any untagged", AnyTag(), nil, true},
		{"any tagged", AnyTag(), cpu, true},
		{"none untagged", NoTags(), nil, false},
		{"none tagged", NoTags(), gpu, false},
	}
	for _, c := range cases {
		if got := c.filter.Matches(c.tag); got != c.want {
			t.Errorf("%s: Matches = %v, want %v", c.name, got, c.want)
		}
	}
}
