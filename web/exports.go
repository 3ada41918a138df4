package web

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
)

// exportTime bounds one download: the server's write timeout is for pages,
// and an export of a large project streams for longer.
const exportTime = time.Hour

func exportPattern(d export.Dataset, f export.Format) string {
	return fmt.Sprintf("/projects/{id}/exports/%s.%s", d, f)
}

func exportPath(projectID int64, d export.Dataset, f export.Format) string {
	return fmt.Sprintf("/projects/%d/exports/%s.%s", projectID, d, f)
}

// sentWriter notes whether anything reached the client, after which an
// error can no longer be a page of its own.
type sentWriter struct {
	w    io.Writer
	sent bool
}

func (s *sentWriter) Write(p []byte) (int, error) {
	s.sent = s.sent || len(p) > 0
	return s.w.Write(p)
}

// exportHandler streams one dataset as an attachment, writing rows as the
// database sends them, and then writes the export to the audit log with
// its row count. An error before the first byte is an ordinary error page;
// after it the connection is cut, so that a browser reports a failed
// download instead of saving a file that looks whole.
func (s *Server) exportHandler(d export.Dataset, f export.Format) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, _, err := s.projectAccess(r, true)
		if err != nil {
			return err
		}
		ctx := r.Context()
		withRaters := d == export.Gold && r.URL.Query().Get("raters") == "1"
		h := w.Header()
		h.Set("Content-Type", f.ContentType())
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": export.FileName(p.Name, d, f)}))
		h.Set("Cache-Control", "no-store")
		if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(exportTime)); err != nil && err != http.ErrNotSupported {
			return err
		}
		out := &sentWriter{w: w}
		rows, err := s.db.WriteExport(ctx, out, p.ID, d, f, withRaters)
		ev := store.ExportEvent{ActorID: &userFrom(ctx).ID, ProjectID: p.ID, Dataset: d, Format: f, Rows: rows, WithRaters: withRaters, Via: "web"}
		if err != nil {
			ev.Err = err.Error()
		}
		// The audit write outlives a client that went away mid-download.
		if aerr := s.db.RecordExport(context.WithoutCancel(ctx), ev); aerr != nil && err == nil {
			err = aerr
		}
		if err == nil {
			return nil
		}
		if !out.sent {
			for _, k := range []string{"Content-Type", "Content-Disposition"} {
				h.Del(k)
			}
			return err
		}
		s.log.ErrorContext(ctx, "export cut short", "request_id", infoFrom(ctx).id, "dataset", string(d), "rows", rows, "err", err)
		panic(http.ErrAbortHandler)
	}
}
