package durablecheck

import (
	"fmt"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// durablePath is the import path of the runtime whose orchestration
// context marks orchestration code. The package itself is not checked: its
// internals are the scheduler and legitimately use channels and locks.
const durablePath = "github.com/duroxide-go/cdb/durable"

// Analyzer reports nondeterministic constructs in orchestration code.
var Analyzer = &analysis.Analyzer{
	Name:      "durablecheck",
	Doc:       "report nondeterministic constructs in durable orchestration code\n\nSee the package documentation of github.com/duroxide-go/cdb/analysis/durablecheck for the rules.",
	URL:       "https://pkg.go.dev/github.com/duroxide-go/cdb/analysis/durablecheck",
	Run:       run,
	FactTypes: []analysis.Fact{new(ReachesNondeterminism)},
}

// ReachesNondeterminism is the fact exported for a function whose body,
// or a function it calls within its module, contains a construct that is
// not replay-safe. Orchestration code in another package of the module
// that calls the function is reported at the call, since the function's
// own package cannot know it runs as orchestration code.
type ReachesNondeterminism struct {
	Module string // module of the package that declares the function
	What   string // the construct, e.g. "time.Now"
	Where  string // file:line of the construct
	Advice string // what to use instead
}

// AFact marks ReachesNondeterminism as an analysis fact.
func (*ReachesNondeterminism) AFact() {}

// String is the fact as analysistest expectations match it.
func (f *ReachesNondeterminism) String() string {
	return fmt.Sprintf("reaches %s (%s)", f.What, f.Where)
}

func run(pass *analysis.Pass) (any, error) {
	if pass.Pkg.Path() == durablePath || isStandard(pass) {
		return nil, nil
	}
	c := newChecker(pass)
	c.collect()
	c.dropIgnored(ignoredLines(pass))
	c.report(c.fromRoots())
	c.exportFacts()
	return nil, nil
}

// report reports the findings of the reached units, and their calls into
// other packages of the module that reach one, once per position. A
// finding in a declared function that is not itself an orchestration
// says which orchestration reaches it.
func (c *checker) report(reached []*unit, via map[*unit]*unit) {
	reported := map[token.Pos]bool{}
	for _, u := range reached {
		suffix := ""
		if u.fn != nil && !u.root {
			suffix = fmt.Sprintf(" (%s is reached from %s)", c.name(u), c.name(via[u]))
		}
		for _, f := range u.findings {
			if !reported[f.pos] {
				reported[f.pos] = true
				c.pass.Reportf(f.pos, "%s in orchestration code: %s%s", f.what, f.advice, suffix)
			}
		}
		for _, call := range u.external {
			if fact := c.externalFact(call.fn); fact != nil && !reported[call.pos] {
				reported[call.pos] = true
				c.pass.Reportf(call.pos, "call to %s reaches %s (%s) in orchestration code: %s%s",
					qualifiedName(call.fn), fact.What, fact.Where, fact.Advice, suffix)
			}
		}
	}
}

// dropIgnored forgets the findings and external calls on ignored lines,
// so they are neither reported nor carried in facts.
func (c *checker) dropIgnored(ignored map[lineKey]bool) {
	if len(ignored) == 0 {
		return
	}
	keep := func(pos token.Pos) bool {
		p := c.pass.Fset.Position(pos)
		return !ignored[lineKey{p.Filename, p.Line}]
	}
	for _, u := range c.units {
		fs := u.findings[:0]
		for _, f := range u.findings {
			if keep(f.pos) {
				fs = append(fs, f)
			}
		}
		u.findings = fs
		ext := u.external[:0]
		for _, e := range u.external {
			if keep(e.pos) {
				ext = append(ext, e)
			}
		}
		u.external = ext
	}
}

// ignoreDirective, in a comment on a line or alone on the line above it,
// silences the findings on that line. It is for code that is
// nondeterministic on purpose, such as tests of the runtime's replay
// checks; the rest of the comment should say why.
const ignoreDirective = "//durablecheck:ignore"

type lineKey struct {
	file string
	line int
}

// ignoredLines returns the lines the ignore directive covers.
func ignoredLines(pass *analysis.Pass) map[lineKey]bool {
	lines := map[lineKey]bool{}
	for _, f := range pass.Files {
		for _, group := range f.Comments {
			for _, cm := range group.List {
				if !strings.HasPrefix(cm.Text, ignoreDirective) {
					continue
				}
				p := pass.Fset.Position(cm.Slash)
				lines[lineKey{p.Filename, p.Line}] = true
				lines[lineKey{p.Filename, p.Line + 1}] = true
			}
		}
	}
	return lines
}

// isStandard reports whether the package belongs to the standard library,
// whose functions are judged by the rules, not by facts.
func isStandard(pass *analysis.Pass) bool {
	if pass.Module != nil && pass.Module.Path != "" {
		return pass.Module.Path == "std"
	}
	first, _, _ := strings.Cut(pass.Pkg.Path(), "/")
	return !strings.Contains(first, ".")
}

func modulePath(pass *analysis.Pass) string {
	if pass.Module != nil {
		return pass.Module.Path
	}
	return ""
}

// qualifiedName names fn as a caller writes it: pkg.F or (pkg.T).M.
func qualifiedName(fn *types.Func) string {
	qual := func(p *types.Package) string { return p.Name() }
	if recv := fn.Signature().Recv(); recv != nil {
		return "(" + types.TypeString(recv.Type(), qual) + ")." + fn.Name()
	}
	if fn.Pkg() == nil {
		return fn.Name()
	}
	return fn.Pkg().Name() + "." + fn.Name()
}

// isCtxPointer reports whether t is *durable.OrchestrationContext.
func isCtxPointer(t types.Type) bool {
	p, ok := types.Unalias(t).(*types.Pointer)
	return ok && isDurableNamed(p.Elem(), "OrchestrationContext")
}

func isDurableNamed(t types.Type, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return false
	}
	obj := n.Origin().Obj()
	return obj.Name() == name && obj.Pkg() != nil && obj.Pkg().Path() == durablePath
}

// firstParam returns the type of sig's first parameter, or nil.
func firstParam(sig *types.Signature) types.Type {
	if sig == nil || sig.Params().Len() == 0 {
		return nil
	}
	return sig.Params().At(0).Type()
}

// isOrchestrationSig reports whether sig takes *durable.OrchestrationContext
// first: every orchestration (the registration functions require that
// signature) and every helper that orchestration code hands its context.
func isOrchestrationSig(sig *types.Signature) bool {
	return isCtxPointer(firstParam(sig))
}

// isActivitySig reports whether sig takes durable.ActivityContext first:
// activity code, which may do anything.
func isActivitySig(sig *types.Signature) bool {
	return isDurableNamed(firstParam(sig), "ActivityContext")
}
