package apisurface_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duroxide-go/cdb/internal/leaktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// root is the module root, relative to this package's directory.
const root = "../.."

// exported returns the exported top-level names of the package in dir
// (test files excluded), and the exported fields of each exported struct.
func exported(t *testing.T, dir string) (names map[string]bool, fields map[string][]string) {
	t.Helper()
	names, fields = map[string]bool{}, map[string][]string{}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		collect(f, names, fields)
	}
	if len(names) == 0 {
		t.Fatalf("%s: no exported names found", dir)
	}
	return names, fields
}

// collect adds f's exported top-level names and struct fields.
func collect(f *ast.File, names map[string]bool, fields map[string][]string) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.IsExported() {
				names[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					names[s.Name.Name] = true
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, fl := range st.Fields.List {
							for _, id := range fl.Names {
								if id.IsExported() {
									fields[s.Name.Name] = append(fields[s.Name.Name], id.Name)
								}
							}
						}
					}
				case *ast.ValueSpec:
					for _, id := range s.Names {
						if id.IsExported() {
							names[id.Name] = true
						}
					}
				}
			}
		}
	}
}

// TestNoTestOnlyAPIInProductionPackages: fault hooks, fake clocks and
// "for test" constructors live in internal or test-helper packages, so a
// production user's go doc does not show them.
func TestNoTestOnlyAPIInProductionPackages(t *testing.T) {
	for _, dir := range []string{".", "durable", "duroxide", "memprovider", "localcosmos", "embedded", "schedule"} {
		names, fields := exported(t, dir)
		for n := range names {
			if strings.Contains(n, "ForTest") || strings.HasPrefix(n, "Test") || n == "Hooks" || n == "Call" {
				t.Errorf("%s exports the test-only name %s", dir, n)
			}
		}
		for typ, fs := range fields {
			for _, f := range fs {
				if f == "Test" || f == "Hooks" {
					t.Errorf("%s: %s.%s is a test-only field", dir, typ, f)
				}
			}
		}
	}
}

// TestLocalServerHasNoTestKnobs: the local server (localcosmos, the store
// embedded.Open runs in production) offers hooks, not test knobs: faults,
// added latency, lagging replicas and the control endpoint are package
// cosmostest's, the test façade on top of it.
func TestLocalServerHasNoTestKnobs(t *testing.T) {
	names, _ := exported(t, "localcosmos")
	for n := range names {
		for _, w := range []string{"Fault", "Latency", "Lag", "Control", "Drop"} {
			if strings.Contains(n, w) {
				t.Errorf("localcosmos exports %s, a test knob (it belongs in cosmostest)", n)
			}
		}
	}
	for _, m := range methods(t, "localcosmos", "Server") {
		for _, w := range []string{"Fault", "Latency", "Lag", "Control"} {
			if strings.Contains(m, w) {
				t.Errorf("localcosmos.Server has the method %s, a test knob (it belongs in cosmostest)", m)
			}
		}
	}
}

// methods returns the exported methods of type typ in the package in dir
// (test files excluded).
func methods(t *testing.T, dir, typ string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() || receiverName(fd) != typ {
				continue
			}
			out = append(out, fd.Name.Name)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no methods of %s found", dir, typ)
	}
	return out
}

// receiverName is the name of fd's receiver type, without the pointer.
func receiverName(fd *ast.FuncDecl) string {
	x := fd.Recv.List[0].Type
	if st, ok := x.(*ast.StarExpr); ok {
		x = st.X
	}
	if id, ok := x.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// TestNoStutter: a name does not repeat its package's name (Go reads
// cdb.Leases, not cdb.Leases: the package is the Cosmos provider;
// cosmostest.New, not cosmostest.New).
func TestNoStutter(t *testing.T) {
	for dir, words := range map[string][]string{".": {"Cosmos"}, "cosmostest": {"Test", "Cosmos"}, "localcosmos": {"Local", "Cosmos"}, "schedule": {"Schedule"}} {
		names, _ := exported(t, dir)
		for n := range names {
			for _, w := range words {
				if strings.Contains(n, w) {
					t.Errorf("%s exports %s, which repeats %q", dir, n, w)
				}
			}
		}
	}
}

// TestHelperPackagesExportOnlyTheirAPI: the shared suites' sample payload
// types are not API, and both suites take one Factory type
// (providertest.Factory).
func TestHelperPackagesExportOnlyTheirAPI(t *testing.T) {
	names, _ := exported(t, "durable/durabletest")
	for _, n := range []string{"AddReq", "AddRes", "Ack", "Factory", "FactoryFunc", "HistoryCorrupter"} {
		if names[n] {
			t.Errorf("durable/durabletest exports %s", n)
		}
	}
	if names, _ := exported(t, "duroxide/providertest"); !names["Factory"] {
		t.Error("duroxide/providertest does not export Factory")
	}
}
