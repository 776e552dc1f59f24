package durable_test

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The durable package is four layers, and a production file's name says
// which one it is in:
//
//   - api: what orchestration and activity code touch (the context, futures,
//     combinators, registry, codec, options, errors, activity, telemetry),
//     plus the helpers the other layers share (events.go, ids.go,
//     jsonutil.go, pointers.go);
//   - engine: the replay engine (replay*.go, coroutine.go, action.go): it
//     replays one execution's history through the code and produces the
//     turn's result, events and actions (replayRun in replay_run.go is
//     all it is given);
//   - dispatch: the runtime and its dispatchers (runtime.go, dispatch_*.go,
//     turn.go, commit.go, locklease.go, nondeterminism.go, limits.go,
//     wake.go): they fetch work, run the engine and commit what it
//     produced;
//   - client: the Client (client*.go); it wakes a runtime through the
//     func the runtime gave it, not through dispatch.
type layer string

const (
	api      layer = "api"
	engine   layer = "engine"
	dispatch layer = "dispatch"
	client   layer = "client"
)

// layerOf names the layer of a production file, or "" for a file no rule
// covers: a new file must be given a layer here (and a name that says it).
func layerOf(file string) layer {
	switch {
	case strings.HasPrefix(file, "replay"), file == "coroutine.go", file == "action.go":
		return engine
	case strings.HasPrefix(file, "dispatch_"), slices.Contains(dispatchFiles, file):
		return dispatch
	case strings.HasPrefix(file, "client"):
		return client
	case slices.Contains(apiFiles, file):
		return api
	}
	return ""
}

// dispatchFiles are the dispatch layer's files without the dispatch_ prefix.
var dispatchFiles = []string{
	"commit.go", "limits.go", "locklease.go", "nondeterminism.go", "runtime.go", "turn.go", "wake.go",
}

// apiFiles are the user API layer's files.
var apiFiles = []string{
	"activity.go", "activity_heartbeat.go", "codec.go", "combinators.go", "context.go", "context_history_size.go", "context_patching.go",
	"context_schedule.go", "context_state.go", "context_typed.go", "context_update.go", "doc.go", "errors.go", "future.go", "options.go", "registry.go", "retry.go",
	"schedule.go", "telemetry.go", "timeouts.go",
	// Helpers the other layers share.
	"events.go", "ids.go", "jsonutil.go", "pointers.go",
}

// forbidden says whether a declaration in layer to may not be referred to
// from layer from. The engine replays history without knowing who fetched
// it or who asked for it: it refers to nothing in dispatch or the client.
// The client writes to the provider and wakes the runtime's dispatchers
// through the func the runtime gave it (Client.runtimeWake): it refers to
// nothing in dispatch either.
func forbidden(from, to layer, name string) bool {
	switch from {
	case engine, client:
		return to == dispatch || (from == engine && to == client)
	}
	return false
}

// reference is one use, in a production file, of a declaration in another
// layer.
type reference struct {
	pos      token.Position
	from, to layer
	name     string // the declaration, as Type.method or Type.field for members
}

// TestLayers fails when a production file has no layer, or refers to a
// declaration of a layer it may not use (see forbidden).
func TestLayers(t *testing.T) {
	refs, unassigned := crossLayerReferences(t)
	for _, f := range unassigned {
		t.Errorf("%s has no layer: name it for its layer, or add it to layerOf in layers_test.go", f)
	}
	reported, runsEngine := map[string]bool{}, false
	for _, r := range refs {
		runsEngine = runsEngine || r.from == dispatch && r.to == engine
		key := r.pos.Filename + " " + r.name
		if forbidden(r.from, r.to, r.name) && !reported[key] {
			reported[key] = true
			t.Errorf("%s: the %s layer refers to %s, declared in the %s layer", r.pos, r.from, r.name, r.to)
		}
	}
	if !runsEngine {
		// The dispatchers do run the engine: seeing no such reference
		// means the check resolves nothing and would pass anything.
		t.Error("found no reference from dispatch to the engine")
	}
}

// crossLayerReferences type-checks the package's production files and
// returns every reference from one layer to a declaration of another, and
// the files that have no layer.
func crossLayerReferences(t *testing.T) (refs []reference, unassigned []string) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		if layerOf(n) == "" {
			unassigned = append(unassigned, n)
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("github.com/duroxide-go/cdb/durable", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	fields := fieldOwners(pkg)
	for id, obj := range info.Uses {
		name, ok := declared(pkg, obj, fields)
		if !ok {
			continue
		}
		use, decl := fset.Position(id.Pos()), fset.Position(obj.Pos())
		from, to := layerOf(use.Filename), layerOf(decl.Filename)
		if from != to && from != "" && to != "" {
			refs = append(refs, reference{pos: use, from: from, to: to, name: name})
		}
	}
	sort.Slice(refs, func(i, j int) bool {
		a, b := refs[i].pos, refs[j].pos
		return a.Filename < b.Filename || a.Filename == b.Filename && a.Offset < b.Offset
	})
	return refs, unassigned
}

// fieldOwners maps each field of pkg's package-level struct types to its
// type's name.
func fieldOwners(pkg *types.Package) map[*types.Var]string {
	owners := map[*types.Var]string{}
	for _, n := range pkg.Scope().Names() {
		tn, ok := pkg.Scope().Lookup(n).(*types.TypeName)
		if !ok {
			continue
		}
		if st, ok := tn.Type().Underlying().(*types.Struct); ok {
			for i := range st.NumFields() {
				owners[st.Field(i)] = n
			}
		}
	}
	return owners
}

// declared names obj if it is one of pkg's declarations: a package-level
// name, a method, or a field of a package-level struct type (both named
// Type.name).
func declared(pkg *types.Package, obj types.Object, fields map[*types.Var]string) (string, bool) {
	if obj.Pkg() != pkg {
		return "", false
	}
	if obj.Parent() == pkg.Scope() {
		return obj.Name(), true
	}
	switch o := obj.(type) {
	case *types.Func:
		if recv := o.Signature().Recv(); recv != nil {
			return typeName(recv.Type()) + "." + o.Name(), true
		}
	case *types.Var:
		if owner, ok := fields[o]; ok {
			return owner + "." + o.Name(), true
		}
	}
	return "", false
}

// typeName is the name of a method's receiver type, without pointer or type
// arguments.
func typeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return t.String()
}
