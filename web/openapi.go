package web

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"sync"

	"go.yaml.in/yaml/v3"
)

// The API's description is written as YAML, one file per area of the API
// (web/openapi/*.yaml), and served as one OpenAPI 3.1 JSON document. The
// web tests validate every API response they receive against it and fail
// when an operation of the route table is missing from it, so it cannot
// drift from what the server does.
//
//go:embed openapi/*.yaml
var openAPIFiles embed.FS

// OpenAPI returns the API's OpenAPI document as JSON. openapi.yaml holds
// what the document has once (its version, info, security, shared
// components); every other file adds paths and components, and a name
// defined twice is an error, so that one area cannot shadow another's.
var OpenAPI = sync.OnceValues(func() ([]byte, error) {
	doc, err := readOpenAPI("openapi/openapi.yaml")
	if err != nil {
		return nil, err
	}
	files, err := fs.Glob(openAPIFiles, "openapi/*.yaml")
	if err != nil {
		return nil, err
	}
	for _, name := range files {
		if name == "openapi/openapi.yaml" {
			continue
		}
		part, err := readOpenAPI(name)
		if err != nil {
			return nil, err
		}
		for key, value := range part {
			switch key {
			case "paths":
				if err := mergeInto(doc, "paths", value, name); err != nil {
					return nil, err
				}
			case "components":
				parts, _ := value.(map[string]any)
				components, _ := doc["components"].(map[string]any)
				for kind, defs := range parts {
					if err := mergeInto(components, kind, defs, name+": components"); err != nil {
						return nil, err
					}
				}
			default:
				return nil, fmt.Errorf("%s: only paths and components may be added, not %q", name, key)
			}
		}
	}
	return json.Marshal(doc)
})

func readOpenAPI(name string) (map[string]any, error) {
	raw, err := openAPIFiles.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return doc, nil
}

// mergeInto adds the entries of the map value to parent[key], refusing a
// name already there.
func mergeInto(parent map[string]any, key string, value any, from string) error {
	add, ok := value.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: %s is not a mapping", from, key)
	}
	into, _ := parent[key].(map[string]any)
	if into == nil {
		into = map[string]any{}
		parent[key] = into
	}
	for name, v := range add {
		if _, dup := into[name]; dup {
			return fmt.Errorf("%s: %s %q is defined twice", from, key, name)
		}
		into[name] = v
	}
	return nil
}

// openAPI serves the document. It describes the API, not anyone's data,
// so it needs no token: a client generator can read it before it has one.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	doc, err := OpenAPI()
	if err != nil {
		s.Log.ErrorContext(r.Context(), "openapi document", "err", err)
		http.Error(w, "the API description could not be built", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(doc)
}
