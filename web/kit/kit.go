// Package kit is what every feature of the web layer shares: the adapters
// that turn a handler's error into a status and a page (or JSON), the
// render and the frame around a page, the readers of path ids, queries,
// JSON bodies and uploads, the access checks a feature makes as it loads
// the project of the path, and the addresses one feature links to in
// another. Features import kit and never each other; kit imports no
// feature.
package kit

import (
	"log/slog"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/attune/attune/internal/store"
)

// Kit is the part of the server every feature holds: the database, the
// log, the sessions (for the frame's flash messages) and the clock.
type Kit struct {
	DB       *store.DB
	Log      *slog.Logger
	Sessions *scs.SessionManager
	// Now is the clock; tests may set it.
	Now func() time.Time
	// UploadLimit bounds one uploaded file, in bytes; 0 means
	// DefaultUploadLimit.
	UploadLimit int64
}

// DefaultUploadLimit is the bound on one uploaded file when the server
// sets none: 256 MiB.
const DefaultUploadLimit = 256 << 20

// MaxUpload is the bound on one uploaded file.
func (k *Kit) MaxUpload() int64 {
	if k.UploadLimit > 0 {
		return k.UploadLimit
	}
	return DefaultUploadLimit
}
