package pipeline

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// capsFiles are the non-test sources that may read a dependency's optional capabilities by
// type assertion, with the reason. Everywhere else the pipeline reads the record they fill
// (Caps, compactorCaps, budgetCaps, contextSource, sharedStore, postNotifierOf).
var capsFiles = map[string]string{
	"caps.go":     "the capability records, each read once where its dependency enters the pipeline",
	"replicas.go": "the store's capabilities for replicas, read once at New into sharedStore",
}

// TestCapabilitiesAreReadOnlyInCapsFiles parses the package's non-test sources: no file but
// capsFiles asserts a value to an interface (one of the package's, an inline one or another
// package's), in a type assertion or a type switch's case. A use site that needs an optional
// capability reads it from the record its dependency's constructor filled, so a decorator can
// state what it offers and a capability is not found in one place and missed in another.
func TestCapabilitiesAreReadOnlyInCapsFiles(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	ifaces := map[string]bool{} // the package's interface types
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed[f] = af
		ast.Inspect(af, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if _, ok := ts.Type.(*ast.InterfaceType); ok {
					ifaces[ts.Name.Name] = true
				}
			}
			return true
		})
	}
	if len(parsed) == 0 || !ifaces["Compactor"] {
		t.Fatalf("parsed %d files and found interfaces %v: the scan reads nothing", len(parsed), ifaces)
	}
	for _, f := range files {
		af := parsed[f]
		if _, ok := capsFiles[f]; ok || af == nil {
			continue
		}
		report := func(n ast.Node, typ ast.Expr) {
			if capabilityType(typ, ifaces) {
				t.Errorf("%s asserts a capability (%s): read it once where the dependency enters the pipeline, "+
					"into a record in caps.go (like Caps), and read the record's field here; or add the file to capsFiles with a reason",
					fset.Position(n.Pos()), exprString(typ))
			}
		}
		ast.Inspect(af, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.TypeAssertExpr:
				if x.Type != nil { // x.(type) is checked at its cases
					report(x, x.Type)
				}
			case *ast.TypeSwitchStmt:
				for _, c := range x.Body.List {
					for _, typ := range c.(*ast.CaseClause).List {
						report(c, typ)
					}
				}
			}
			return true
		})
	}
}

// capabilityType reports whether typ names an interface: one of the package's (ifaces), an
// inline one, or another package's exported type that is not a pointer (which this syntactic
// scan takes for an interface; a concrete one asserted here would be rare and is listed too).
func capabilityType(typ ast.Expr, ifaces map[string]bool) bool {
	switch x := typ.(type) {
	case *ast.Ident:
		return ifaces[x.Name]
	case *ast.InterfaceType:
		return true
	case *ast.SelectorExpr:
		return true
	}
	return false
}

func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	case *ast.InterfaceType:
		return "interface{…}"
	}
	return "?"
}

// TestCapabilityScanFindsAssertions: the scan flags the forms it is meant to (so the test above
// cannot pass by reading nothing) and leaves plain value assertions alone.
func TestCapabilityScanFindsAssertions(t *testing.T) {
	ifaces := map[string]bool{"Compactor": true}
	for _, c := range []struct {
		src  string
		want bool
	}{
		{"x.(Compactor)", true},
		{"x.(echogate.PostNotifier)", true},
		{"x.(interface{ Unwrap() Replier })", true},
		{"x.(string)", false},
		{"x.(map[string]any)", false},
		{"x.(*turn)", false},
	} {
		e, err := parser.ParseExpr(c.src)
		if err != nil {
			t.Fatal(err)
		}
		if got := capabilityType(e.(*ast.TypeAssertExpr).Type, ifaces); got != c.want {
			t.Errorf("capabilityType(%s) = %v, want %v", c.src, got, c.want)
		}
	}
}

// TestTurnIsGivenWhatItUses reads the package's non-test sources: no Turn method reaches the
// Pipeline (t.p.…); a Turn is given what it uses at construction (newTurn: its clock, metrics,
// store, toolEnv, skillLib, the usage ledger's pricer and observers, …).
func TestTurnIsGivenWhatItUses(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	use := regexp.MustCompile(`\bt\.p\.`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			code, _, _ := strings.Cut(line, "//")
			if use.MatchString(code) {
				t.Errorf("%s:%d reaches the Pipeline from a Turn (t.p.): give the Turn what it uses at construction (newTurn)", f, i+1)
			}
		}
	}
}
