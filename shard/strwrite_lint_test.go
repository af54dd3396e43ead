package shard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoWriteThroughStr is the write gate's check for in-place string
// edits (writegate.go). Go has no read-only slices, so Entry.Str's bytes
// could be written without the pre-change hook; this test reads every
// non-test Go file of the module outside package shard and fails on a
// write into a slice that came from Str(): an index assignment, a copy
// into it, clear, or a call of a known in-place mutator (bitmap.Set*,
// hll.DenseSet*, hll.SetCached, hll.Invalidate, binary Put*). A name
// that is also assigned from ModifyStr or StrW (the writable bytes) counts
// as writable: the check is per function and flow-insensitive, and does not
// follow a slice through calls or returns. It is a lint, a second line
// after the types: writes belong in StrW/ModifyStr, which run the hook.
func TestNoWriteThroughStr(t *testing.T) {
	root := ".."
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Skip("module root not found")
	}
	var bad []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "shard", "testdata", ".git", "vendor":
				if path != root {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		bad = append(bad, strWrites(fset, f)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s: writes into an Entry.Str() slice; use DB.ModifyStr or Entry.StrW (the snapshot pre-change hook)", b)
	}
}

// TestStrWriteLintCatches feeds strWrites the patterns it must flag and
// the ones it must pass.
func TestStrWriteLintCatches(t *testing.T) {
	src := `package p
func bad1() { p := e.Str(); p[0] = 1 }
func bad2() { db.Modify(&e); p := e.Str(); copy(p[3:], v) }
func bad3() { var cur []byte; cur, x = e.Str(), 1; bitmap.Set(cur, 3, 1) }
func bad4() { hll.SetCached(e.Str(), 5) }
func bad5() { p := e.Str()[4:]; p[1]++ }
func ok1() { p := db.ModifyStr(&e); p[0] = 1 }
func ok2() { p := e.Str(); if x { p = db.ModifyStr(&e) }; hll.DenseSetReg(p, 1, 2) }
func ok3() { p := e.Str(); q := make([]byte, 3); copy(q, p); _ = bitmap.Get(p, 1) }
func ok4() { g, w, _ := db.GrowString(&e, 9); copy(g.StrW(w)[1:], v) }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "lint.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := strWrites(fset, f)
	if len(got) != 5 {
		t.Fatalf("flagged %d writes, want 5 (bad1..bad5): %v", len(got), got)
	}
	for i, g := range got {
		if !strings.Contains(g, "lint.go:"+string(rune('2'+i))) {
			t.Errorf("flag %d at %s, want line %d", i, g, 2+i)
		}
	}
}

// strMutator reports whether the function called name (a builtin or
// pkg.Func) writes into its first argument.
func strMutator(name string) bool {
	switch name {
	case "bitmap.Set", "bitmap.SetInt", "hll.DenseSet", "hll.DenseSetReg",
		"hll.SetCached", "hll.Invalidate", "clear", "copy":
		return true
	}
	// binary.LittleEndian.PutUint32(b, ...), binary.PutUvarint(b, ...)
	return strings.Contains(name, ".Put")
}

// strWrites returns the positions in f of writes into Str() slices.
func strWrites(fset *token.FileSet, f *ast.File) []string {
	var out []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		tainted, writable := map[string]bool{}, map[string]bool{}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != len(as.Rhs) {
				return true
			}
			for i, l := range as.Lhs {
				id, ok := l.(*ast.Ident)
				if !ok {
					continue
				}
				switch {
				case isStrCall(as.Rhs[i], "Str"):
					tainted[id.Name] = true
				case isStrCall(as.Rhs[i], "ModifyStr"), isStrCall(as.Rhs[i], "StrW"):
					writable[id.Name] = true
				}
			}
			return true
		})
		readOnly := func(e ast.Expr) bool {
			for {
				switch x := e.(type) {
				case *ast.ParenExpr:
					e = x.X
				case *ast.SliceExpr:
					e = x.X
				case *ast.IndexExpr:
					e = x.X
				case *ast.Ident:
					return tainted[x.Name] && !writable[x.Name]
				default:
					return isStrCall(e, "Str")
				}
			}
		}
		flag := func(p token.Pos) { out = append(out, fset.Position(p).String()) }
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.AssignStmt:
				for _, l := range x.Lhs {
					if ix, ok := l.(*ast.IndexExpr); ok && readOnly(ix.X) {
						flag(x.Pos())
					}
				}
			case *ast.IncDecStmt:
				if ix, ok := x.X.(*ast.IndexExpr); ok && readOnly(ix.X) {
					flag(x.Pos())
				}
			case *ast.CallExpr:
				name := ""
				switch f := x.Fun.(type) {
				case *ast.Ident:
					name = f.Name
				case *ast.SelectorExpr:
					if pkg, ok := f.X.(*ast.Ident); ok {
						name = pkg.Name + "." + f.Sel.Name
					} else if strings.HasPrefix(f.Sel.Name, "Put") {
						name = "binary." + f.Sel.Name // binary.LittleEndian.Put...
					}
				}
				if strMutator(name) && len(x.Args) > 0 && readOnly(x.Args[0]) {
					flag(x.Pos())
				}
			}
			return true
		})
	}
	return out
}

// isStrCall reports whether e is a call X.name() with no arguments, or a
// slice of one.
func isStrCall(e ast.Expr, name string) bool {
	for {
		switch x := e.(type) {
		case *ast.SliceExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.CallExpr:
			s, ok := x.Fun.(*ast.SelectorExpr)
			return ok && s.Sel.Name == name && (len(x.Args) == 0 || name != "Str")
		default:
			return false
		}
	}
}
