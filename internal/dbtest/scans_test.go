package dbtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEveryTestScanChecksItsError holds the module's tests to the rule that a
// Scan's error is checked, and a rows loop's error after it: a dropped error
// followed by "expect zero" passes a broken query. It lives beside the database helpers because that is where
// tests go to read the database, and it needs no database itself.
func TestEveryTestScanChecksItsError(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Nested modules and tool directories are not this module's tests.
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		found, err := droppedScans(fset, rel, src)
		if err != nil {
			return err
		}
		files++
		for _, problem := range found {
			t.Error(problem)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A walk that found nothing would pass whatever the tree holds.
	if files < 10 {
		t.Fatalf("found only %d test files under %s; is the walk looking in the right place?", files, root)
	}
}

func TestDroppedScansFindsEveryDroppedError(t *testing.T) {
	const dropped = ": the error of this Scan is dropped; check it"
	const unchecked = ": this loop over rows never checks rows.Err(); a query failing midway reads as fewer rows"
	cases := []struct {
		name string
		body string
		want []string // problems, at line numbers inside the snippet file
	}{
		{"bare statement", "row.Scan(&n)", []string{"x_test.go:4" + dropped}},
		{"chained query", "db.Pool().QueryRow(ctx, q).Scan(&n)", []string{"x_test.go:4" + dropped}},
		{"assigned to blank", "_ = row.Scan(&n)", []string{"x_test.go:4" + dropped}},
		{"in parentheses", "(row.Scan(&n))", []string{"x_test.go:4" + dropped}},
		{"deferred", "defer row.Scan(&n)", []string{"x_test.go:4" + dropped}},
		{"inside a closure", "f := func() { row.Scan(&n) }\nf()", []string{"x_test.go:4" + dropped}},
		{"in a rows loop", "for rows.Next() {\n\trows.Scan(&n)\n}\nrows.Err()", []string{"x_test.go:5" + dropped}},
		{"rows loop without Err", "for rows.Next() {\n\tcheck(rows.Scan(&n))\n}", []string{"x_test.go:4" + unchecked}},
		{"Err of other rows", "for rows.Next() {\n}\nother.Err()", []string{"x_test.go:4" + unchecked}},
		{"rows loop with Err", "for rows.Next() {\n\tcheck(rows.Scan(&n))\n}\nif err := rows.Err(); err != nil {\n\tt.Fatal(err)\n}", nil},
		{"Err checked in a closure's own loop", "f := func() {\n\tfor r.Next() {\n\t}\n\tcheck(r.Err())\n}\n_ = f", nil},
		{"checked in if", "if err := row.Scan(&n); err != nil {\n\tt.Fatal(err)\n}", nil},
		{"assigned to err", "err := row.Scan(&n)\n_ = err", nil},
		{"returned", "f := func() error { return row.Scan(&n) }\n_ = f", nil},
		{"passed on", "check(row.Scan(&n))", nil},
		{"another method", "row.Close()", nil},
		{"a function named Scan", "Scan(&n)", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "package x\n\nfunc f() {\n" + c.body + "\n}\n"
			got, err := droppedScans(token.NewFileSet(), "x_test.go", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("droppedScans(%q) = %q, want %q", c.body, got, c.want)
			}
		})
	}
}

// droppedScans returns, as "file:line: problem", every call of a method named
// Scan whose result is thrown away (a statement on its own, a defer or go, an
// assignment to the blank identifier) and every `for x.Next()` loop in a
// function that never calls x.Err().
func droppedScans(fset *token.FileSet, name string, src []byte) ([]string, error) {
	file, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var found []string
	report := func(e ast.Expr) {
		call, ok := ast.Unparen(e).(*ast.CallExpr)
		if !ok {
			return
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Scan" {
			found = append(found, where(fset, call)+": the error of this Scan is dropped; check it")
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.FuncDecl:
			if s.Body != nil {
				found = append(found, uncheckedRows(fset, s.Body)...)
			}
		case *ast.FuncLit:
			found = append(found, uncheckedRows(fset, s.Body)...)
		case *ast.ExprStmt:
			report(s.X)
		case *ast.DeferStmt:
			report(s.Call)
		case *ast.GoStmt:
			report(s.Call)
		case *ast.AssignStmt:
			if len(s.Rhs) == 1 && allBlank(s.Lhs) {
				report(s.Rhs[0])
			}
		}
		return true
	})
	return found, nil
}

// uncheckedRows finds the loops over rows in body (not in closures inside it,
// which are functions of their own) whose rows' Err is never called in body.
func uncheckedRows(fset *token.FileSet, body *ast.BlockStmt) []string {
	checked := map[string]bool{}
	var loops []*ast.ForStmt
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if name, ok := methodOn(n, "Err"); ok {
				checked[name] = true
			}
		case *ast.ForStmt:
			if call, ok := n.Cond.(*ast.CallExpr); ok {
				if _, ok := methodOn(call, "Next"); ok {
					loops = append(loops, n)
				}
			}
		}
		return true
	})
	var found []string
	for _, loop := range loops {
		name, _ := methodOn(loop.Cond.(*ast.CallExpr), "Next")
		if !checked[name] {
			found = append(found, where(fset, loop)+": this loop over "+name+" never checks "+name+".Err(); a query failing midway reads as fewer rows")
		}
	}
	return found
}

// methodOn reports the variable a call of method on a plain variable is
// made on, as in rows.Next().
func methodOn(call *ast.CallExpr, method string) (string, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != method || len(call.Args) != 0 {
		return "", false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}

func where(fset *token.FileSet, n ast.Node) string {
	pos := fset.Position(n.Pos())
	return pos.Filename + ":" + strconv.Itoa(pos.Line)
}

func allBlank(exprs []ast.Expr) bool {
	for _, e := range exprs {
		if id, ok := e.(*ast.Ident); !ok || id.Name != "_" {
			return false
		}
	}
	return true
}

// moduleRoot is the directory holding go.mod above this package.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
