package authority_test

import (
	"go/ast"
	"go/types"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestOnlyAuthorityRunsTools is the architecture rule behind the one
// path: outside internal/authority, nothing calls Run on a tools.Tool.
// The one exception is a tool that wraps another (a decorator): inside its
// own Run method it may pass its call on, since that call came through the
// authority already. Tests are not checked: they exercise tools directly.
func TestOnlyAuthorityRunsTools(t *testing.T) {
	if testing.Short() {
		t.Skip("loads and type-checks the whole module")
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo, Dir: "../.."}
	pkgs, err := packages.Load(cfg, "github.com/hestia-dev/hestia/...")
	if err != nil {
		t.Fatal(err)
	}
	var toolIface *types.Interface
	for _, p := range pkgs {
		if p.PkgPath == "github.com/hestia-dev/hestia/internal/tools" && p.Types != nil {
			toolIface, _ = p.Types.Scope().Lookup("Tool").Type().Underlying().(*types.Interface)
		}
	}
	if toolIface == nil {
		t.Fatal("internal/tools.Tool not found: the rule cannot be checked")
	}
	var bad []string
	checked := 0
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.PkgPath, e)
		}
		if p.PkgPath == "github.com/hestia-dev/hestia/internal/authority" || p.TypesInfo == nil {
			continue
		}
		for _, f := range p.Syntax {
			if strings.HasSuffix(p.Fset.Position(f.Pos()).Filename, "_test.go") {
				continue
			}
			checked++
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				decorator := fn.Recv != nil && fn.Name.Name == "Run" && implementsTool(p.TypesInfo, fn, toolIface)
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok || sel.Sel.Name != "Run" {
						return true
					}
					tv, ok := p.TypesInfo.Types[sel.X]
					if !ok || !types.Implements(tv.Type, toolIface) && !types.Implements(types.NewPointer(tv.Type), toolIface) {
						return true
					}
					if decorator {
						return true
					}
					pos := p.Fset.Position(call.Pos())
					bad = append(bad, pos.String()+": "+fn.Name.Name+" calls a tool's Run directly")
					return true
				})
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d files checked: the loader found less than the module", checked)
	}
	for _, b := range bad {
		t.Errorf("%s; call authority.Invoke instead (one path: policy, taint, grants, card, audit)", b)
	}
}

// implementsTool reports whether fn's receiver type is a tool.
func implementsTool(info *types.Info, fn *ast.FuncDecl, iface *types.Interface) bool {
	if len(fn.Recv.List) == 0 {
		return false
	}
	tv, ok := info.Types[fn.Recv.List[0].Type]
	if !ok {
		return false
	}
	return types.Implements(tv.Type, iface)
}
