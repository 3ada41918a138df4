package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
)

// The store satisfies the interface the exports read through.
var _ export.Source = (*store.DB)(nil)

// storeMayUseFromExport is what the store may take from package export:
// the rows it yields and the names of what was exported, for the audit
// log. The writers, the tables and the flows are export's own.
var storeMayUseFromExport = []string{
	"Dataset", "Format", "Which", "WhichGold",
	"Label", "JudgeCall", "GoldItem", "Rater", "Record", "Rating",
	// EachAnswer reads a stored JSON object of answers, the shape the
	// store's copies of answer sets have.
	"EachAnswer",
}

// TestStoreSpeaksSQLOnly: the store reads and writes PostgreSQL and hands
// on rows; it parses no file and writes no export. Its files may import
// neither encoding/csv nor a Parquet library nor the parsing of import
// files, and may use from package export only the rows it yields.
func TestStoreSpeaksSQLOnly(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := map[string]string{
		"encoding/csv":                               "parsing CSV is the importer's and dataset's, writing it export's",
		"github.com/parquet-go/parquet-go":           "Parquet is written by package export",
		"github.com/attune/attune/internal/dataset":  "import files are parsed by package dataset before the store sees them",
		"github.com/attune/attune/internal/importer": "the importer calls the store, not the other way round",
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		exportName := ""
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if why, bad := forbidden[path]; bad {
				t.Errorf("%s imports %s: %s", fset.Position(imp.Pos()), path, why)
			}
			if path == "github.com/attune/attune/internal/export" {
				exportName = "export"
				if imp.Name != nil {
					exportName = imp.Name.Name
				}
			}
		}
		if exportName == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == exportName && !slices.Contains(storeMayUseFromExport, sel.Sel.Name) {
				t.Errorf("%s uses export.%s: the store yields rows, and package export writes them", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked only %d files of the store", checked)
	}
}
