// Package migrations holds the SQL migrations of the attune schema, embedded
// so that the binary carries the schema it expects.
package migrations

import "embed"

// FS holds every migration file, named NNNNN_description.sql, as goose reads them.
//
//go:embed *.sql
var FS embed.FS
