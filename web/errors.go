package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/views/layout"
)

// handler is the shape of every attune handler: it writes a response or
// returns an error for h to turn into one.
type handler func(w http.ResponseWriter, r *http.Request) error

// h adapts a handler: error kinds become statuses with a page that says
// what happened; anything else is a 500, logged once here and never shown.
func (s *Server) h(fn handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := fn(w, r)
		if err == nil {
			return
		}
		msg := attune.PublicMessage(err)
		var big *tooLarge
		switch {
		case errors.Is(err, attune.ErrNotFound):
			s.renderError(w, r, http.StatusNotFound, "Not found", "There is nothing here, or you do not have access to it.")
		case errors.Is(err, attune.ErrForbidden):
			s.renderError(w, r, http.StatusForbidden, "Not allowed", orDefault(msg, "Your account does not have access to this."))
		case errors.Is(err, attune.ErrUnauthorized):
			s.renderError(w, r, http.StatusUnauthorized, "Signed out", "Sign in to continue.")
		case errors.Is(err, attune.ErrConflict):
			s.renderError(w, r, http.StatusConflict, "Could not do that", msg)
		case errors.As(err, &big):
			s.renderError(w, r, http.StatusRequestEntityTooLarge, "Too large", big.Error())
		case errors.Is(err, attune.ErrInvalid):
			s.renderError(w, r, http.StatusUnprocessableEntity, "Please check your input", msg)
		case errors.Is(err, store.ErrReadsBusy):
			w.Header().Set("Retry-After", readsRetryAfter)
			s.renderError(w, r, http.StatusServiceUnavailable, "Busy", readsBusyMessage)
		case errors.Is(err, store.ErrReadTimeout):
			title, msg := readTimeout(err)
			s.renderError(w, r, http.StatusServiceUnavailable, title, msg)
		default:
			s.serverError(w, r, err)
		}
	})
}

// What a lead is told when the heavy reads are all taken (store.ErrReadsBusy)
// or one ran out of time (store.ErrReadTimeout): both are 503, the first
// with a Retry-After in seconds.
const (
	readsRetryAfter  = "5"
	readsBusyMessage = "attune is busy with other searches, reports and exports; try again in a few seconds"
)

// readTimeout is the title and message for a heavy read that ran out of
// time: what to narrow, or to try later.
func readTimeout(err error) (title, msg string) {
	var te *store.ReadTimeoutError
	kind := store.ReadSearch
	if errors.As(err, &te) {
		kind = te.Read
	}
	switch kind {
	case store.ReadReport:
		return "The report took too long", "the report took too long to read; narrow it (fewer annotators or judges, or a date range) or try again later"
	case store.ReadExport:
		return "The export took too long", "the export took too long to read from the database; try again later, when attune is less busy"
	}
	return "The search took too long", "the search took too long; narrow it (fewer words, or a filter such as meta or id)"
}

// tooLarge is a request body over its limit: a 413 naming the limit.
type tooLarge struct {
	what  string // "form", "file", "body"
	limit int64  // bytes
}

func (e *tooLarge) Error() string {
	return fmt.Sprintf("the %s is larger than %d MiB; send less at once", e.what, e.limit>>20)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func isNotFound(err error) bool { return errors.Is(err, attune.ErrNotFound) }

func (s *Server) serverError(w http.ResponseWriter, r *http.Request, err error) {
	if s.clientGone(w, r, err) {
		return
	}
	if s.databaseAway(w, r, err, func(status int, msg string) { s.renderError(w, r, status, "Try again", msg) }) {
		return
	}
	ri := infoFrom(r.Context())
	s.log.ErrorContext(r.Context(), "server error", "request_id", ri.id, "method", r.Method, "path", r.URL.Path, "err", err)
	s.renderError(w, r, http.StatusInternalServerError, "Something went wrong",
		"attune could not finish this request. It has been logged as "+ri.id+"; try again, and tell your admin if it keeps happening.")
}

// statusClientClosed is what a request the client gave up on is logged
// with (as proxies log it): no one reads the response.
const statusClientClosed = 499

// clientGone handles an error that is only the client going away (a draft
// save the browser cancelled, a page left while it loaded): logged at
// info, as nothing went wrong on attune's side, and not a 500. It reports
// whether it handled err.
func (s *Server) clientGone(w http.ResponseWriter, r *http.Request, err error) bool {
	if !errors.Is(err, context.Canceled) || !errors.Is(r.Context().Err(), context.Canceled) {
		return false
	}
	s.log.InfoContext(r.Context(), "request cancelled by the client", "request_id", infoFrom(r.Context()).id,
		"method", r.Method, "path", r.URL.Path, "status", statusClientClosed)
	w.WriteHeader(statusClientClosed)
	return true
}

func (s *Server) renderError(w http.ResponseWriter, r *http.Request, status int, heading, message string) {
	s.render(w, r, status, layout.Error(layout.ErrorPage{
		Chrome:  s.chrome(r, heading, ""),
		Status:  status,
		Heading: heading,
		Message: message,
	}))
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) error {
	return attune.NotFound("page")
}

// render writes a templ component as an HTML response with the status.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := c.Render(r.Context(), w); err != nil {
		s.log.ErrorContext(r.Context(), "render", "request_id", infoFrom(r.Context()).id, "err", err)
	}
}

// chrome builds the frame's view model for the current viewer, taking the
// one-time flash message out of the session.
func (s *Server) chrome(r *http.Request, title, active string) layout.Chrome {
	c := layout.Chrome{Title: title, Active: active}
	if u := userFrom(r.Context()); u != nil {
		c.User = &layout.Viewer{Name: u.DisplayName(), Role: string(u.Role), IsAdmin: u.Role == attune.RoleAdmin}
		if msg := s.sessions.PopString(r.Context(), sessionFlash); msg != "" {
			c.Flash = layout.Flash{Kind: "notice", Message: msg}
		}
		if msg := s.sessions.PopString(r.Context(), sessionFlashError); msg != "" {
			c.Flash = layout.Flash{Kind: "error", Message: msg}
		}
	}
	return c
}
