package lazyre

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNoPackageLevelCompile is a repository rule: no package linked into
// cmd/hestia compiles a regular expression or parses a template in a
// package-level variable's initialiser. Every package's init runs in every hestia process, so each
// such expression is paid by every CLI command (see
// docs/decisions/startup-cost.md); lazyre.New compiles on first use and
// costs nothing at start.
func TestNoPackageLevelCompile(t *testing.T) {
	// pending are files known to break the rule, being changed by others
	// when the rule came; remove an entry once its file uses lazyre.
	pending := map[string]bool{}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command to list the binary's packages")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}|{{.Dir}}|{{join .GoFiles \"|\"}}{{end}}", "github.com/hestia-dev/hestia/cmd/hestia").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if !strings.HasPrefix(f[0], "github.com/hestia-dev/hestia/") {
			continue // third-party: startup-cost.md says what they cost
		}
		dir, rel := f[1], strings.TrimPrefix(f[0], "github.com/hestia-dev/hestia/")
		for _, name := range f[2:] {
			path := filepath.Join(dir, name)
			if pending[rel+"/"+name] {
				continue
			}
			file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("parsing %s: %v", path, err)
			}
			checked++
			for _, pos := range packageLevelCompiles(file) {
				t.Errorf("%s: a regular expression compiled (or a template parsed) in a package-level variable costs every hestia process at start; use lazyre.New (sync.OnceValue for a template)", fset.Position(pos))
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d files of hestia's own packages; the listing went wrong", checked)
	}
}

// expensive are the calls that parse or compile at init when a
// package-level variable's initialiser makes them, by import path.
var expensive = map[string][]string{
	"regexp":        {"MustCompile", "Compile", "MustCompilePOSIX", "CompilePOSIX"},
	"html/template": {"Must", "New", "ParseFiles", "ParseGlob", "ParseFS"},
	"text/template": {"Must", "New", "ParseFiles", "ParseGlob", "ParseFS"},
}

// packageLevelCompiles returns where a top-level var's initialiser
// compiles a regular expression or parses a template (the calls in
// expensive) outside a function literal (a literal's body runs when
// called, not at init).
func packageLevelCompiles(file *ast.File) []token.Pos {
	names := map[string][]string{} // the name a file uses for the package -> its expensive calls
	for _, imp := range file.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		calls, ok := expensive[path]
		if !ok {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if name != "_" {
			names[name] = calls
		}
	}
	if len(names) == 0 {
		return nil
	}
	var found []token.Pos
	for _, decl := range file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				ast.Inspect(v, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.FuncLit:
						return false
					case *ast.CallExpr:
						if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
							if id, ok := sel.X.(*ast.Ident); ok && slices.Contains(names[id.Name], sel.Sel.Name) {
								found = append(found, n.Pos())
								return false // one finding per expression
							}
						}
					}
					return true
				})
			}
		}
	}
	return found
}

func TestPackageLevelCompilesFindsInitialisersOnly(t *testing.T) {
	t.Parallel()
	src := `package p

import (
	re "regexp"
	"html/template"
)

var a = re.MustCompile("x")
var b, c = 1, []*re.Regexp{re.MustCompile("y")}
var d = func() *re.Regexp { return re.MustCompile("z") }
var e = re.QuoteMeta("w")

func f() { _ = re.MustCompile("v") }

var g = template.Must(template.New("g").Parse("{{.}}"))
var h = func() *template.Template { return template.Must(template.New("h").Parse("")) }
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, pos := range packageLevelCompiles(file) {
		lines = append(lines, fset.Position(pos).Line)
	}
	if fmt.Sprint(lines) != "[8 9 15]" {
		t.Errorf("found at lines %v, want [8 9 15]", lines)
	}
}
