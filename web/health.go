package web

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/attune/attune/static"
)

// healthz answers while the process runs; it touches nothing else.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintln(w, "ok")
}

// readyz answers 200 only when the database answers and its schema is the
// one this binary expects, so a load balancer sends no traffic before then.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.ready(ctx); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not ready:", err)
		return
	}
	fmt.Fprintln(w, "ready")
}

func (s *Server) ready(ctx context.Context) error {
	if err := s.DB.Ping(ctx); err != nil {
		return fmt.Errorf("database unreachable")
	}
	st, err := s.DB.MigrationState(ctx)
	if err != nil {
		return fmt.Errorf("schema version unknown")
	}
	if st.Current != st.Latest {
		return fmt.Errorf("schema at version %d, this binary expects %d", st.Current, st.Latest)
	}
	return nil
}

// staticHandler serves the embedded files. A request carrying the current
// content hash may be cached for a year; anything else must revalidate.
// favicon answers /favicon.ico, which browsers and tools ask for whatever
// the page's icon link says: with the same icon, so no request for it is a
// 404 in the log.
func favicon(w http.ResponseWriter, r *http.Request) {
	b, err := fs.ReadFile(static.FS, "img/icon.svg")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	w.Write(b)
}

func staticHandler() http.Handler {
	files := http.FileServerFS(static.FS)
	return http.StripPrefix("/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		if fi, err := fs.Stat(static.FS, name); err != nil || fi.IsDir() {
			http.NotFound(w, r)
			return
		}
		if h, ok := static.Hash(name); ok && r.URL.Query().Get("v") == h {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		files.ServeHTTP(w, r)
	}))
}
