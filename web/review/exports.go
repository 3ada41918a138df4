package review

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
)

// exportTime bounds one download: the server's write timeout is for pages,
// and an export of a large project streams for longer.
const exportTime = time.Hour

// ExportPattern is the path pattern of the page download of dataset d in
// format f; the API serves the same file under /api/v1.
func ExportPattern(d export.Dataset, f export.Format) string {
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

// ExportHandler streams one dataset as an attachment (see download).
func (s *Handler) ExportHandler(d export.Dataset, f export.Format) kit.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, _, err := s.ProjectAccess(r, true)
		if err != nil {
			return err
		}
		withRaters := d == export.Gold && r.URL.Query().Get("raters") == "1"
		ev := store.ExportEvent{ActorID: &kit.UserFrom(r.Context()).ID, ProjectID: p.ID, Dataset: d, Format: f, WithRaters: withRaters, Via: "web"}
		return s.download(w, r, export.FileName(p.Name, d, f), f.ContentType(), ev, func(out io.Writer) (int, error) {
			db, readFrom := s.HeavyReads(r)
			setReadFrom(w, readFrom)
			return export.Write(r.Context(), db, out, p.ID, d, f, withRaters)
		})
	}
}

// APIExport serves one export to a lead's API token: the same file as
// the page's download, streamed.
func (s *Handler) APIExport(d export.Dataset, f export.Format) kit.APIHandler {
	return func(r *http.Request, u *attune.User) (int, any, error) {
		p, err := s.APILeadProject(r, u, "export its data")
		if err != nil {
			return 0, nil, err
		}
		withRaters := d == export.Gold && r.URL.Query().Get("raters") == "1"
		ev := store.ExportEvent{ActorID: &u.ID, ProjectID: p.ID, Dataset: d, Format: f, WithRaters: withRaters, Via: "api"}
		return http.StatusOK, kit.APIDownload(func(w http.ResponseWriter) error {
			return s.download(w, r, export.FileName(p.Name, d, f), f.ContentType(), ev, func(out io.Writer) (int, error) {
				db, readFrom := s.HeavyReads(r)
				setReadFrom(w, readFrom)
				return export.Write(r.Context(), db, out, p.ID, d, f, withRaters)
			})
		}), nil
	}
}

// DatasetPattern is the route of the dataset export in format f, under
// prefix ("" for the pages, "/api/v1" for tokens).
func DatasetPattern(prefix string, f export.Format) string {
	return fmt.Sprintf("GET %s/projects/{id}/exports/%s.%s", prefix, export.Records, f)
}

// datasetPath is the page download of the dataset export.
func datasetPath(projectID int64, f export.Format, o export.RecordOptions) string {
	q := url.Values{"which": {string(o.Which)}}
	if o.Soft {
		q.Set("soft", "1")
	}
	return fmt.Sprintf("/projects/%d/exports/%s.%s?%s", projectID, export.Records, f, q.Encode())
}

// recordOptions reads the dataset export's query: which=gold|labels
// (gold when absent) and soft=1.
func recordOptions(r *http.Request) (export.RecordOptions, error) {
	q := r.URL.Query()
	which, err := export.ParseWhich(q.Get("which"))
	if err != nil {
		return export.RecordOptions{}, attune.Invalid("which", "use gold or labels")
	}
	soft := q.Get("soft")
	if soft != "" && soft != "0" && soft != "1" && soft != "true" && soft != "false" {
		return export.RecordOptions{}, attune.Invalid("soft", "use 1 or 0")
	}
	return export.RecordOptions{Which: which, Soft: soft == "1" || soft == "true"}, nil
}

// DatasetHandler serves a lead's download of the dataset export from the
// gold set page.
func (s *Handler) DatasetHandler(f export.Format) kit.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, _, err := s.ProjectAccess(r, true)
		if err != nil {
			return err
		}
		o, err := recordOptions(r)
		if err != nil {
			return err
		}
		ev := store.ExportEvent{ActorID: &kit.UserFrom(r.Context()).ID, ProjectID: p.ID, Dataset: export.Records, Format: f,
			Which: o.Which, Soft: o.Soft, Via: "web"}
		return s.download(w, r, export.RecordFileName(p.Name, o, f), f.ContentType(), ev, func(out io.Writer) (int, error) {
			db, readFrom := s.HeavyReads(r)
			setReadFrom(w, readFrom)
			return export.WriteRecords(r.Context(), db, out, p.ID, f, o)
		})
	}
}

// APIDataset serves the dataset export to a lead's API token: the same
// file as the page's download.
func (s *Handler) APIDataset(f export.Format) kit.APIHandler {
	return func(r *http.Request, u *attune.User) (int, any, error) {
		p, err := s.APILeadProject(r, u, "export its datasets")
		if err != nil {
			return 0, nil, err
		}
		o, err := recordOptions(r)
		if err != nil {
			return 0, nil, err
		}
		ev := store.ExportEvent{ActorID: &u.ID, ProjectID: p.ID, Dataset: export.Records, Format: f, Which: o.Which, Soft: o.Soft, Via: "api"}
		return http.StatusOK, kit.APIDownload(func(w http.ResponseWriter) error {
			return s.download(w, r, export.RecordFileName(p.Name, o, f), f.ContentType(), ev, func(out io.Writer) (int, error) {
				db, readFrom := s.HeavyReads(r)
				setReadFrom(w, readFrom)
				return export.WriteRecords(r.Context(), db, out, p.ID, f, o)
			})
		}), nil
	}
}

// setReadFrom says on a download where it was read (kit.HeavyReads).
func setReadFrom(w http.ResponseWriter, readFrom string) {
	if readFrom != "" {
		w.Header().Set(kit.ReadFromHeader, readFrom)
	}
}

// download streams an export as an attachment, writing rows as the
// database sends them, and then writes the export to the audit log with
// its row count. An error before the first byte is returned, to be an
// ordinary error response; after it the connection is cut, so that a
// client reports a failed download instead of saving a file that looks
// whole.
func (s *Handler) download(w http.ResponseWriter, r *http.Request, name, contentType string, ev store.ExportEvent, write func(io.Writer) (int, error)) error {
	ctx := r.Context()
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	h.Set("Cache-Control", "no-store")
	if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(exportTime)); err != nil && err != http.ErrNotSupported {
		return err
	}
	out := &sentWriter{w: w}
	rows, err := write(out)
	ev.Rows = rows
	if err != nil {
		ev.Err = err.Error()
	}
	// The audit write outlives a client that went away mid-download.
	if aerr := s.DB.RecordExport(context.WithoutCancel(ctx), ev); aerr != nil && err == nil {
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
	s.Log.ErrorContext(ctx, "export cut short", "request_id", kit.InfoFrom(ctx).ID, "dataset", string(ev.Dataset), "rows", rows, "err", err)
	panic(http.ErrAbortHandler)
}
