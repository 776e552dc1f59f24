package duroxide

import (
	"sort"
	"testing"
)

func TestParseSemVer(t *testing.T) {
	good := map[string]SemVer{
		"0.1.29":                   {Minor: 1, Patch: 29},
		"0.0.0":                    {},
		"10.20.30":                 {Major: 10, Minor: 20, Patch: 30},
		"1.2.3-rc.1":               {Major: 1, Minor: 2, Patch: 3, Pre: "rc.1"},
		"1.2.3-rc-1":               {Major: 1, Minor: 2, Patch: 3, Pre: "rc-1"},
		"1.2.3+build.5":            {Major: 1, Minor: 2, Patch: 3, Build: "build.5"},
		"1.2.3+b-x":                {Major: 1, Minor: 2, Patch: 3, Build: "b-x"},
		"1.2.3+001":                {Major: 1, Minor: 2, Patch: 3, Build: "001"},
		"1.2.3-alpha.0+sha.9":      {Major: 1, Minor: 2, Patch: 3, Pre: "alpha.0", Build: "sha.9"},
		"18446744073709551615.0.0": {Major: 18446744073709551615},
	}
	for s, want := range good {
		got, err := ParseSemVer(s)
		if err != nil || got != want {
			t.Errorf("ParseSemVer(%q) = %#v, %v; want %#v", s, got, err, want)
			continue
		}
		if got.String() != s {
			t.Errorf("%q.String() = %q", s, got.String())
		}
	}
	for _, s := range []string{"", "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.03", "a.b.c", "1.2.-3", "1.2.+3",
		" 1.2.3", "1.2.3 ", "1..3", "1.2.3-", "1.2.3+", "1.2.3-a..b", "1.2.3-01", "1.2.3-a$", "1.2.3+a..b", "1.2.3-+b",
		"18446744073709551616.0.0", "v1.2.3"} {
		if v, err := ParseSemVer(s); err == nil {
			t.Errorf("ParseSemVer(%q) = %#v, want error", s, v)
		}
	}
}

func TestMustParseSemVerPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	MustParseSemVer("nope")
}

func TestSemVerCompare(t *testing.T) {
	// Ascending precedence, from the semver spec's example plus extras.
	ordered := []string{
		"0.0.0", "0.1.9", "0.1.29", "0.1.31", "0.2.0", "1.0.0-0", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
		"1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0",
	}
	vs := make([]SemVer, len(ordered))
	for i, s := range ordered {
		vs[i] = MustParseSemVer(s)
	}
	for i := range vs {
		for j := range vs {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := vs[i].Compare(vs[j]); got != want {
				t.Errorf("%s.Compare(%s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
	shuffled := append([]SemVer(nil), vs...)
	sort.Slice(shuffled, func(i, j int) bool { return shuffled[len(shuffled)-1-i].Compare(shuffled[len(shuffled)-1-j]) < 0 })
	sort.Slice(shuffled, func(i, j int) bool { return shuffled[i].Compare(shuffled[j]) < 0 })
	for i := range vs {
		if shuffled[i] != vs[i] {
			t.Fatalf("sorted order differs at %d: %s", i, shuffled[i])
		}
	}
	// Build metadata does not affect precedence.
	if c := MustParseSemVer("1.0.0+a").Compare(MustParseSemVer("1.0.0+b")); c != 0 {
		t.Errorf("build metadata compared: %d", c)
	}
}

func TestSemVerPacked(t *testing.T) {
	for s, want := range map[string]int64{"0.0.0": 0, "0.1.29": 1029, "1.2.3": 1_002_003, "12.345.678": 12_345_678, "0.1.31-rc.1": 1031} {
		if got := MustParseSemVer(s).Packed(); got != want {
			t.Errorf("%s.Packed() = %d, want %d", s, got, want)
		}
	}
	// Packing preserves order for components below 1000.
	if MustParseSemVer("0.999.999").Packed() >= MustParseSemVer("1.0.0").Packed() {
		t.Error("packing is not monotonic")
	}
}

func TestSemVerRangeContains(t *testing.T) {
	r := SemVerRange{Min: MustParseSemVer("0.1.0"), Max: MustParseSemVer("0.1.29")}
	for s, want := range map[string]bool{"0.0.9": false, "0.1.0": true, "0.1.10": true, "0.1.29": true, "0.1.30": false, "0.1.29-rc.1": true, "0.1.0-rc.1": false, "1.0.0": false} {
		if got := r.Contains(MustParseSemVer(s)); got != want {
			t.Errorf("Contains(%s) = %v, want %v", s, got, want)
		}
	}
}

func TestDispatcherCapabilityFilterMatches(t *testing.T) {
	v := func(s string) *SemVer { x := MustParseSemVer(s); return &x }
	first := SemVerRange{Min: MustParseSemVer("0.0.0"), Max: MustParseSemVer("0.1.29")}
	second := SemVerRange{Min: MustParseSemVer("0.2.0"), Max: MustParseSemVer("0.3.0")}
	cases := []struct {
		name   string
		filter *DispatcherCapabilityFilter
		pinned *SemVer
		want   bool
	}{
		{"nil filter, pinned", nil, v("9.9.9"), true},
		{"nil filter, unpinned", nil, nil, true},
		{"empty list, pinned", &DispatcherCapabilityFilter{}, v("0.1.0"), false},
		{"empty list, unpinned", &DispatcherCapabilityFilter{SupportedDuroxideVersions: []SemVerRange{}}, nil, false},
		{"unpinned always compatible", &DispatcherCapabilityFilter{SupportedDuroxideVersions: []SemVerRange{second}}, nil, true},
		{"in first range", &DispatcherCapabilityFilter{SupportedDuroxideVersions: []SemVerRange{first, second}}, v("0.1.29"), true},
		{"above first range", &DispatcherCapabilityFilter{SupportedDuroxideVersions: []SemVerRange{first}}, v("0.1.30"), false},
		{"only the first range counts", &DispatcherCapabilityFilter{SupportedDuroxideVersions: []SemVerRange{first, second}}, v("0.2.5"), false},
	}
	for _, c := range cases {
		if got := c.filter.Matches(c.pinned); got != c.want {
			t.Errorf("%s: Matches = %v, want %v", c.name, got, c.want)
		}
	}
}
