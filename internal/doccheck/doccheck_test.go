package doccheck_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/duroxide-go/cdb/internal/leaktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// root is the module root, relative to this package's directory.
const root = "../.."

// imports maps the package names a fragment may use to their import
// paths: a fragment gets an import for each name it selects from
// (name.X). A complete file (one that starts with "package") writes its
// own imports and may import anything the module can.
var imports = map[string]string{
	"context": "context",
	"errors":  "errors",
	"fmt":     "fmt",
	"http":    "net/http",
	"log":     "log",
	"os":      "os",
	"slog":    "log/slog",
	"strings": "strings",
	"testing": "testing",
	"time":    "time",

	"azcosmos":   "github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos",
	"azidentity": "github.com/Azure/azure-sdk-for-go/sdk/azidentity",
	"metric":     "go.opentelemetry.io/otel/metric",
	"require":    "github.com/stretchr/testify/require",
	"trace":      "go.opentelemetry.io/otel/trace",

	"cdb":          "github.com/duroxide-go/cdb",
	"cli":          "github.com/duroxide-go/cdb/cmd/duroxide/cli",
	"cosmostest":   "github.com/duroxide-go/cdb/cosmostest",
	"dashboard":    "github.com/duroxide-go/cdb/dashboard",
	"durable":      "github.com/duroxide-go/cdb/durable",
	"durabletest":  "github.com/duroxide-go/cdb/durable/durabletest",
	"duroxide":     "github.com/duroxide-go/cdb/duroxide",
	"embedded":     "github.com/duroxide-go/cdb/embedded",
	"localcosmos":  "github.com/duroxide-go/cdb/localcosmos",
	"memprovider":  "github.com/duroxide-go/cdb/memprovider",
	"payload":      "github.com/duroxide-go/cdb/payload",
	"providertest": "github.com/duroxide-go/cdb/duroxide/providertest",
	"replayer":     "github.com/duroxide-go/cdb/durable/replayer",
	"testenv":      "github.com/duroxide-go/cdb/durable/testenv",
}

// snippet is one ```go block of a markdown file.
type snippet struct {
	file      string // relative to the module root
	line      int    // line of the block's first source line
	src       string // the block, its fence's indentation removed
	directive string // "", "skip" or "given"
	arg       string // skip: the reason; given: Go declarations
	argLine   int    // given: line of the declarations' first line
}

func (s snippet) String() string { return fmt.Sprintf("%s:%d", s.file, s.line) }

// TestDocSnippets type-checks every Go block of README.md and docs/*.md
// (the rules: docs/testing.md, "Checked documentation").
func TestDocSnippets(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var all []snippet
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sn, err := extract(filepath.ToSlash(rel), data)
		if err != nil {
			t.Error(err)
			continue
		}
		all = append(all, sn...)
	}
	if len(all) < 10 {
		t.Fatalf("found %d Go snippets in README.md and docs/*.md; expected more (is the extraction broken?)", len(all))
	}

	imp := exportImporter(t)
	checked := 0
	for _, s := range all {
		if s.directive == "skip" {
			t.Logf("%s: skipped: %s", s, s.arg)
			continue
		}
		if err := check(s, imp); err != nil {
			t.Errorf("%s: the snippet does not compile:\n%v", s, err)
		}
		checked++
	}
	t.Logf("type-checked %d of %d Go snippets", checked, len(all))
}

// extract returns the ```go blocks of a markdown file with the
// <!-- snippet: ... --> comment that ends on the line before each.
func extract(file string, data []byte) ([]snippet, error) {
	var (
		out     []snippet
		lines   []string
		sc      = bufio.NewScanner(bytes.NewReader(data))
		pending *snippet // a directive waiting for its block
	)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		switch {
		case strings.HasPrefix(trimmed, "<!-- snippet:"):
			d, end, err := directive(file, lines, i)
			if err != nil {
				return nil, err
			}
			if end+1 >= len(lines) || strings.TrimSpace(lines[end+1]) != "```go" {
				return nil, fmt.Errorf("%s:%d: a snippet directive must end on the line before a ```go block", file, i+1)
			}
			pending, i = d, end
		case strings.HasPrefix(trimmed, "```"):
			indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]
			lang := strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
			start := i + 1
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			}
			if i == len(lines) {
				return nil, fmt.Errorf("%s:%d: unterminated code block", file, start)
			}
			if lang != "go" {
				continue
			}
			s := snippet{file: file, line: start + 1}
			if pending != nil {
				s.directive, s.arg, s.argLine = pending.directive, pending.arg, pending.argLine
				pending = nil
			}
			var b strings.Builder
			for _, l := range lines[start:i] {
				b.WriteString(strings.TrimPrefix(l, indent))
				b.WriteByte('\n')
			}
			s.src = b.String()
			out = append(out, s)
		}
	}
	return out, nil
}

// directive parses the snippet comment starting at lines[i]; it returns
// the directive and the index of the comment's last line.
func directive(file string, lines []string, i int) (*snippet, int, error) {
	first := strings.TrimPrefix(strings.TrimSpace(lines[i]), "<!-- snippet:")
	end := i
	var body []string
	if rest, ok := strings.CutSuffix(strings.TrimSpace(first), "-->"); ok {
		first = rest
	} else {
		for end = i + 1; end < len(lines) && strings.TrimSpace(lines[end]) != "-->"; end++ {
			body = append(body, lines[end])
		}
		if end == len(lines) {
			return nil, 0, fmt.Errorf("%s:%d: unterminated snippet comment (end it with a line holding only -->)", file, i+1)
		}
	}
	kind, arg, _ := strings.Cut(strings.TrimSpace(first), " ")
	d := &snippet{directive: kind, arg: strings.TrimSpace(arg)}
	switch kind {
	case "skip":
		if d.arg == "" || len(body) > 0 {
			return nil, 0, fmt.Errorf("%s:%d: write <!-- snippet: skip REASON --> on one line, with the reason", file, i+1)
		}
	case "given":
		if d.arg != "" || len(body) == 0 {
			return nil, 0, fmt.Errorf("%s:%d: a given comment holds Go declarations on the lines after \"<!-- snippet: given\"", file, i+1)
		}
		d.arg, d.argLine = strings.Join(body, "\n")+"\n", i+2
	default:
		return nil, 0, fmt.Errorf("%s:%d: unknown snippet directive %q (want skip or given)", file, i+1, kind)
	}
	return d, end, nil
}

// check type-checks one snippet.
func check(s snippet, imp types.Importer) error {
	complete := isComplete(s.src)
	if complete && s.directive == "given" {
		return fmt.Errorf("a complete file (it starts with package) declares what it needs itself: drop the given comment")
	}
	var src string
	if complete {
		src = lineDirective(s.file, s.line) + s.src
	} else {
		var err error
		if src, err = wrap(s); err != nil {
			return err
		}
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "snippet.go", src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	var errs []string
	conf := types.Config{
		Importer: imp,
		Error: func(err error) {
			// Fragments show a call, not a program: a variable they
			// declare for the reader need not be used.
			if te, ok := err.(types.Error); ok && !complete && te.Soft &&
				(strings.Contains(te.Msg, "declared and not used") || strings.Contains(te.Msg, "imported and not used")) {
				return
			}
			errs = append(errs, err.Error())
		},
	}
	_, _ = conf.Check("snippet", fset, []*ast.File{f}, nil)
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// isComplete reports whether src is a whole Go file: its first line that
// is neither blank nor a comment is a package clause.
func isComplete(src string) bool {
	for l := range strings.SplitSeq(src, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		return strings.HasPrefix(l, "package ")
	}
	return false
}

// wrap makes a file of a fragment: the imports it needs, its given
// declarations, then the fragment itself, as top-level declarations when
// it parses as such and otherwise as the body of a func returning error.
func wrap(s snippet) (string, error) {
	asDecls := true
	body := lineDirective(s.file, s.line) + s.src
	if _, err := parser.ParseFile(token.NewFileSet(), "snippet.go", "package snippet\n"+body, parser.SkipObjectResolution); err != nil {
		asDecls = false
		body = "func _() error {\n" + body + "return nil\n}\n"
	}
	given := ""
	if s.directive == "given" {
		given = lineDirective(s.file, s.argLine) + s.arg
	}
	// Parse once without imports to learn which packages it names.
	probe := "package snippet\n" + given + body
	f, err := parser.ParseFile(token.NewFileSet(), "snippet.go", probe, parser.SkipObjectResolution)
	if err != nil {
		if asDecls {
			return "", err
		}
		// Report the error as the reader meant the block: declarations
		// when it starts like them.
		if first := firstWord(s.src); first == "func" || first == "type" || first == "var" || first == "const" {
			_, derr := parser.ParseFile(token.NewFileSet(), "snippet.go", "package snippet\n"+lineDirective(s.file, s.line)+s.src, parser.SkipObjectResolution)
			return "", derr
		}
		return "", err
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && imports[id.Name] != "" {
				used[id.Name] = true
			}
		}
		return true
	})
	var b strings.Builder
	b.WriteString("package snippet\n\nimport (\n")
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range used {
			if !yield(n) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "\t%s %q\n", name, imports[name])
	}
	b.WriteString(")\n\n")
	b.WriteString(given)
	b.WriteString(body)
	return b.String(), nil
}

func firstWord(src string) string {
	for l := range strings.SplitSeq(src, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "//") {
			w, _, _ := strings.Cut(l, " ")
			return w
		}
	}
	return ""
}

// lineDirective makes the positions of what follows those of the
// markdown file, so errors name the line a reader sees.
func lineDirective(file string, line int) string {
	return fmt.Sprintf("\n//line %s:%d\n", file, line)
}

// exportImporter builds the packages fragments may import (and their
// dependencies) with go list -export and returns an importer reading
// their export data: the same type information the compiler uses, with
// nothing written into the repository.
func exportImporter(t *testing.T) types.Importer {
	t.Helper()
	args := []string{"list", "-export", "-deps", "-json=ImportPath,Export,Error"}
	for _, p := range imports {
		args = append(args, p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Export string
			Error              *struct{ Err string }
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Error != nil {
			t.Fatalf("go list -export: %s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %q: a fragment may import only the packages named in doccheck_test.go's imports table; a complete file, only those and their dependencies", path)
		}
		return os.Open(f)
	})
}
