package duroxide

import (
	"fmt"
	"strconv"
	"strings"
)

// SemVer is a semantic version (major.minor.patch with optional
// pre-release and build metadata), the Go stand-in for Rust's semver::Version.
type SemVer struct {
	Major, Minor, Patch uint64
	Pre                 string
	Build               string
}

// ParseSemVer parses "1.2.3", "1.2.3-rc.1" or "1.2.3+build".
func ParseSemVer(s string) (SemVer, error) {
	var v SemVer
	rest := s
	hasPre, hasBuild := false, false
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		v.Build, rest, hasBuild = rest[i+1:], rest[:i], true
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		v.Pre, rest, hasPre = rest[i+1:], rest[:i], true
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 || !validIdents(v.Pre, true, hasPre) || !validIdents(v.Build, false, hasBuild) {
		return SemVer{}, fmt.Errorf("duroxide: invalid semantic version %q", s)
	}
	nums := [3]*uint64{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		if p == "" || (len(p) > 1 && p[0] == '0') {
			return SemVer{}, fmt.Errorf("duroxide: invalid semantic version %q", s)
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return SemVer{}, fmt.Errorf("duroxide: invalid semantic version %q", s)
		}
		*nums[i] = n
	}
	return v, nil
}

// validIdents checks pre-release (pre) or build metadata identifiers as
// Rust's semver crate does: dot-separated, non-empty, [0-9A-Za-z-], and no
// leading zero in a numeric pre-release identifier. present reports that
// the separator ('-' or '+') occurred, so that "1.2.3-" is rejected.
func validIdents(s string, pre, present bool) bool {
	if s == "" {
		return !present
	}
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		numeric := true
		for i := 0; i < len(id); i++ {
			c := id[i]
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-':
				numeric = false
			default:
				return false
			}
		}
		if pre && numeric && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}

// MustParseSemVer is ParseSemVer for constants; it panics on bad input.
func MustParseSemVer(s string) SemVer {
	v, err := ParseSemVer(s)
	if err != nil {
		panic(err)
	}
	return v
}

// String formats the version as semver text.
func (v SemVer) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	if v.Build != "" {
		s += "+" + v.Build
	}
	return s
}

// Compare orders versions by semver precedence (build metadata ignored):
// -1 if v < o, 0 if equal, +1 if v > o.
func (v SemVer) Compare(o SemVer) int {
	for _, d := range [3][2]uint64{{v.Major, o.Major}, {v.Minor, o.Minor}, {v.Patch, o.Patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	return comparePre(v.Pre, o.Pre)
}

func comparePre(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return 1 // a release ranks above its pre-releases
	case b == "":
		return -1
	}
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if c := compareIdent(as[i], bs[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(as) < len(bs):
		return -1
	case len(as) > len(bs):
		return 1
	}
	return 0
}

func compareIdent(a, b string) int {
	an, aerr := strconv.ParseUint(a, 10, 64)
	bn, berr := strconv.ParseUint(b, 10, 64)
	switch {
	case aerr == nil && berr == nil:
		if an < bn {
			return -1
		} else if an > bn {
			return 1
		}
		return 0
	case aerr == nil:
		return -1 // numeric identifiers rank below alphanumeric ones
	case berr == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// Packed returns major·1,000,000 + minor·1,000 + patch, the integer the
// Rust crate stores for range queries on pinned versions.
func (v SemVer) Packed() int64 {
	return int64(v.Major)*1_000_000 + int64(v.Minor)*1_000 + int64(v.Patch)
}

// SemVerRange is an inclusive version range [Min, Max].
type SemVerRange struct {
	Min, Max SemVer
}

// Contains reports whether Min <= v <= Max.
func (r SemVerRange) Contains(v SemVer) bool {
	return r.Min.Compare(v) <= 0 && v.Compare(r.Max) <= 0
}

// DispatcherCapabilityFilter restricts which executions a dispatcher may
// fetch, by the duroxide version each execution is pinned to.
type DispatcherCapabilityFilter struct {
	SupportedDuroxideVersions []SemVerRange
}

// Matches reports whether an execution pinned to pinned (nil = no pin) is
// compatible. Phase 1 semantics, as in Rust duroxide: an unpinned execution
// is always compatible, only the first range counts, and an empty list
// matches nothing.
func (f *DispatcherCapabilityFilter) Matches(pinned *SemVer) bool {
	if f == nil {
		return true
	}
	if len(f.SupportedDuroxideVersions) == 0 {
		return false
	}
	if pinned == nil {
		return true
	}
	return f.SupportedDuroxideVersions[0].Contains(*pinned)
}
