package kit

import (
	"errors"
	"net/url"
	"slices"

	"github.com/attune/attune/internal/attune"
)

// ReadLeniently reads a page's query with read. When read refuses fields
// of it (an attune.ValidationError), it reads the query again without
// them, and so on, so that a page can show what the rest of its query asks
// for, with each refused field's message beside it, rather than an error
// page in its place. The problems are by query parameter; any other error
// of read is returned as it is. The API reads its queries strictly.
func ReadLeniently[T any](q url.Values, read func(url.Values) (T, error)) (T, map[string]string, error) {
	q = cloneValues(q)
	var problems map[string]string
	for {
		v, err := read(q)
		var ve *attune.ValidationError
		if !errors.As(err, &ve) || len(ve.Fields) == 0 {
			return v, problems, err
		}
		if problems == nil {
			problems = map[string]string{}
		}
		dropped := false
		for field, msg := range ve.Fields {
			if _, seen := problems[field]; !seen {
				problems[field] = msg
			}
			if q.Has(field) {
				q.Del(field)
				dropped = true
			}
		}
		if !dropped {
			// The refusal names no parameter of the query: leaving
			// fields out cannot mend it.
			return v, problems, err
		}
	}
}

// cloneValues copies a query, so that a reader may change its copy.
func cloneValues(q url.Values) url.Values {
	out := make(url.Values, len(q))
	for k, v := range q {
		out[k] = slices.Clone(v)
	}
	return out
}
