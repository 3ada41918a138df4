package rubric

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
)

// builtinFS holds the built-in definitions, one file per rubric version.
//
//go:embed builtin/*.yaml
var builtinFS embed.FS

// ErrNotFound is returned (wrapped) when no rubric has the asked key@version.
var ErrNotFound = errors.New("rubric: not found")

// Builtins returns the built-in rubric definitions, ordered by file name
// (key, then version). Each call parses afresh, so callers own what they
// get. The embedded files are checked by the package's tests; Builtins
// panics if one fails to parse, which is a build defect.
func Builtins() []*Definition {
	defs, err := builtins()
	if err != nil {
		panic(err)
	}
	return defs
}

func builtins() ([]*Definition, error) {
	names, err := fs.Glob(builtinFS, "builtin/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("rubric: builtins: %w", err)
	}
	defs := make([]*Definition, 0, len(names))
	for _, name := range names {
		data, err := builtinFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("rubric: builtin %s: %w", path.Base(name), err)
		}
		d, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("rubric: builtin %s: %w", path.Base(name), err)
		}
		defs = append(defs, d)
	}
	return defs, nil
}

// Builtin returns the built-in definition named by ref ("key@version").
// It returns an error wrapping ErrNotFound if there is none.
func Builtin(ref string) (*Definition, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	for _, d := range Builtins() {
		if d.Ref() == r {
			return d, nil
		}
	}
	return nil, fmt.Errorf("%w: no built-in rubric %s", ErrNotFound, r)
}
