package web_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// features are the packages of the web layer that each serve one feature's
// pages and API.
var features = []string{"account", "annotate", "judging", "projects", "reports", "review"}

// TestFeaturesImportNoOtherFeature: a feature of the web layer imports kit,
// the views and the internal packages, and never another feature; kit
// imports no feature, and the views import no other package of web. Only package web, which composes the
// route table, imports them. Where one feature shows another's part (the
// project page's judges), it is handed a function when the table is built.
func TestFeaturesImportNoOtherFeature(t *testing.T) {
	t.Parallel()
	const module = "github.com/attune/attune/web/"
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if dir == "." {
			return nil // package web composes the features
		}
		top, _, _ := strings.Cut(dir, "/")
		seen[top] = true
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rest, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			to, _, _ := strings.Cut(rest, "/")
			if top == "views" && to != "views" {
				t.Errorf("%s imports %s: a view imports only other views", path, p)
			}
			if slices.Contains(features, to) && to != top {
				t.Errorf("%s imports %s: a %s may not import the feature %s", path, p, kindOf(top), to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(features, "kit", "views") {
		if !seen[f] {
			t.Errorf("no source files found in web/%s: the walk is broken or the list is stale", f)
		}
	}
}

func kindOf(dir string) string {
	if slices.Contains(features, dir) {
		return "feature"
	}
	return "package under web/ that is no feature (" + dir + ")"
}
