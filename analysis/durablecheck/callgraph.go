package durablecheck

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// unit is one function body of the package: a declared function or
// method, or a function literal. Nested literals are units of their own,
// linked from the unit that holds them.
type unit struct {
	fn       *types.Func // nil for a literal
	pos      token.Pos   // where the function starts
	edges    []*unit     // same-package functions it calls or refers to
	external []extRef    // functions of other packages it calls or refers to
	findings []finding   // its own constructs that are not replay-safe
	root     bool        // orchestration code by signature
	activity bool        // activity code by signature
}

// extRef is a use of a function declared in another package.
type extRef struct {
	pos token.Pos
	fn  *types.Func
}

// finding is one construct that is not replay-safe.
type finding struct {
	pos    token.Pos
	what   string
	advice string
}

type checker struct {
	pass   *analysis.Pass
	units  []*unit
	byFunc map[*types.Func]*unit
}

func newChecker(pass *analysis.Pass) *checker {
	return &checker{pass: pass, byFunc: map[*types.Func]*unit{}}
}

// collect makes a unit of every function body in the package, then walks
// each for findings and references.
func (c *checker) collect() {
	var walks []func()
	for _, file := range c.pass.Files {
		for _, decl := range file.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Body == nil {
					continue
				}
				fn, _ := c.pass.TypesInfo.Defs[d.Name].(*types.Func)
				if fn == nil {
					continue
				}
				u := c.newUnit(fn, d.Pos(), fn.Signature())
				c.byFunc[fn] = u
				walks = append(walks, func() { c.walk(u, d.Body) })
			case *ast.GenDecl:
				// Literals in package-level initialisers (var orch = func(ctx ...)).
				walks = append(walks, func() { c.walk(nil, d) })
			}
		}
	}
	// Walk after every declared function has its unit, so calls to
	// functions declared later in the package resolve.
	for _, w := range walks {
		w()
	}
}

func (c *checker) newUnit(fn *types.Func, pos token.Pos, sig *types.Signature) *unit {
	u := &unit{fn: fn, pos: pos, root: isOrchestrationSig(sig), activity: isActivitySig(sig)}
	c.units = append(c.units, u)
	return u
}

// walk visits node as the body of u (nil outside any function), turning
// function literals into units of their own.
func (c *checker) walk(u *unit, node ast.Node) {
	ast.Inspect(node, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			sig, _ := c.pass.TypesInfo.TypeOf(n).(*types.Signature)
			lit := c.newUnit(nil, n.Pos(), sig)
			if u != nil && !lit.activity {
				// A literal written in orchestration code is taken to run
				// there (durable.Go blocks, sort callbacks, deferred calls).
				u.edges = append(u.edges, lit)
			}
			c.walk(lit, n.Body)
			return false
		case *ast.SelectStmt:
			if u == nil {
				return true
			}
			u.add(n.Select, "select statement", adviceSelect)
			// The channel operations of its cases are the select's; walk
			// only the case bodies.
			for _, cl := range n.Body.List {
				for _, s := range cl.(*ast.CommClause).Body {
					c.walk(u, s)
				}
			}
			return false
		case *ast.Ident:
			if u != nil {
				c.reference(u, n)
			}
		}
		if u != nil {
			c.check(u, n)
		}
		return true
	})
}

// reference records a use of a function: an edge within the package, an
// external reference otherwise, and a finding if a rule names it.
func (c *checker) reference(u *unit, id *ast.Ident) {
	fn, ok := c.pass.TypesInfo.Uses[id].(*types.Func)
	if !ok {
		return
	}
	fn = fn.Origin()
	if what, advice, bad := ruleFor(fn); bad {
		u.add(id.Pos(), what, advice)
		return
	}
	if isInterfaceMethod(fn) || fn.Pkg() == nil {
		return // dynamic call: not followed (documented limit)
	}
	sig := fn.Signature()
	if isActivitySig(sig) {
		return
	}
	if target, ok := c.byFunc[fn]; ok {
		u.edges = append(u.edges, target)
		return
	}
	if fn.Pkg() != c.pass.Pkg && fn.Pkg().Path() != durablePath && !isOrchestrationSig(sig) {
		// A function taking the orchestration context is orchestration
		// code by signature: its own package reports its body.
		u.external = append(u.external, extRef{pos: id.Pos(), fn: fn})
	}
}

func isInterfaceMethod(fn *types.Func) bool {
	recv := fn.Signature().Recv()
	return recv != nil && types.IsInterface(recv.Type())
}

func (u *unit) add(pos token.Pos, what, advice string) {
	u.findings = append(u.findings, finding{pos: pos, what: what, advice: advice})
}

// roots are the units that are orchestration code by signature.
func (c *checker) roots() []*unit {
	var rs []*unit
	for _, u := range c.units {
		if u.root {
			rs = append(rs, u)
		}
	}
	return rs
}

// fromRoots returns the units reachable from the roots, in breadth-first
// order, each with the root it was first reached from.
func (c *checker) fromRoots() (order []*unit, via map[*unit]*unit) {
	type item struct{ u, root *unit }
	via = map[*unit]*unit{}
	var queue []item
	for _, r := range c.roots() {
		queue = append(queue, item{r, r})
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if _, seen := via[it.u]; seen {
			continue
		}
		via[it.u] = it.root
		order = append(order, it.u)
		for _, e := range it.u.edges {
			queue = append(queue, item{e, it.root})
		}
	}
	return order, via
}

// name names u for a message: its qualified name, or where a literal is.
func (c *checker) name(u *unit) string {
	if u.fn != nil {
		return qualifiedName(u.fn)
	}
	return "the function literal at " + c.where(u.pos)
}

// reachable returns the units reachable from start, in breadth-first
// order, not going on from a root other than start: a root is
// orchestration code of its own, whatever refers to it.
func (c *checker) reachable(start *unit) []*unit {
	seen := map[*unit]bool{}
	var order []*unit
	queue := []*unit{start}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if seen[u] {
			continue
		}
		seen[u] = true
		order = append(order, u)
		if u == start || !u.root {
			queue = append(queue, u.edges...)
		}
	}
	return order
}

// externalFact returns the fact of a function declared in another package
// of the same module, or nil.
func (c *checker) externalFact(fn *types.Func) *ReachesNondeterminism {
	var fact ReachesNondeterminism
	if !c.pass.ImportObjectFact(fn, &fact) || fact.Module != modulePath(c.pass) {
		return nil
	}
	return &fact
}

// exportFacts exports a fact for every exported function that is not
// orchestration code by signature and reaches a construct that is not
// replay-safe.
func (c *checker) exportFacts() {
	for _, u := range c.units {
		if u.fn == nil || u.root || u.activity || !u.fn.Exported() {
			continue
		}
		if fact := c.firstFinding(u); fact != nil {
			c.pass.ExportObjectFact(u.fn, fact)
		}
	}
}

// firstFinding returns the fact for u: the first finding, in breadth-first
// order, of what u reaches outside orchestration code, or nil.
func (c *checker) firstFinding(u *unit) *ReachesNondeterminism {
	mod := modulePath(c.pass)
	for _, r := range c.reachable(u) {
		if r.root {
			continue // orchestration code of its own, reported where it is
		}
		if len(r.findings) > 0 {
			f := r.findings[0]
			return &ReachesNondeterminism{Module: mod, What: f.what, Where: c.where(f.pos), Advice: f.advice}
		}
		for _, call := range r.external {
			if fact := c.externalFact(call.fn); fact != nil {
				return &ReachesNondeterminism{Module: mod, What: fact.What, Where: fact.Where, Advice: fact.Advice}
			}
		}
	}
	return nil
}

func (c *checker) where(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	return shortFile(p.Filename) + ":" + itoa(p.Line)
}
