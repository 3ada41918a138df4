package kit

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

// Handler is the shape of every attune handler: it writes a response or
// returns an error for H to turn into one.
type Handler func(w http.ResponseWriter, r *http.Request) error

// H adapts a Handler: error kinds become statuses with a page that says
// what happened; anything else is a 500, logged once here and never shown.
func (k *Kit) H(fn Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := fn(w, r)
		if err == nil {
			return
		}
		msg := attune.PublicMessage(err)
		var big *TooLarge
		switch {
		case errors.Is(err, attune.ErrNotFound):
			k.RenderError(w, r, http.StatusNotFound, "Not found", "There is nothing here, or you do not have access to it.")
		case errors.Is(err, attune.ErrForbidden):
			k.RenderError(w, r, http.StatusForbidden, "Not allowed", OrDefault(msg, "Your account does not have access to this."))
		case errors.Is(err, attune.ErrUnauthorized):
			k.RenderError(w, r, http.StatusUnauthorized, "Signed out", "Sign in to continue.")
		case errors.Is(err, attune.ErrConflict):
			k.RenderError(w, r, http.StatusConflict, "Could not do that", msg)
		case errors.As(err, &big):
			k.RenderError(w, r, http.StatusRequestEntityTooLarge, "Too large", big.Error())
		case errors.Is(err, attune.ErrInvalid):
			k.RenderError(w, r, http.StatusUnprocessableEntity, "Please check your input", msg)
		case errors.Is(err, store.ErrReadsBusy):
			w.Header().Set("Retry-After", ReadsRetryAfter)
			k.RenderError(w, r, http.StatusServiceUnavailable, "Busy", ReadsBusyMessage)
		case errors.Is(err, store.ErrReadTimeout):
			title, msg := ReadTimeout(err)
			k.RenderError(w, r, http.StatusServiceUnavailable, title, msg)
		default:
			k.ServerError(w, r, err)
		}
	})
}

// What a lead is told when the heavy reads are all taken (store.ErrReadsBusy)
// or one ran out of time (store.ErrReadTimeout): both are 503, the first
// with a Retry-After in seconds.
const (
	ReadsRetryAfter  = "5"
	ReadsBusyMessage = "attune is busy with other searches, reports and exports; try again in a few seconds"
)

// readTimeout is the title and message for a heavy read that ran out of
// time: what to narrow, or to try later.
func ReadTimeout(err error) (title, msg string) {
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

// TooLarge is a request body over its limit: a 413 naming the limit.
type TooLarge struct {
	What  string // "form", "file", "body"
	Limit int64  // bytes
}

func (e *TooLarge) Error() string {
	return fmt.Sprintf("the %s is larger than %d MiB; send less at once", e.What, e.Limit>>20)
}

func OrDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// IsNotFound reports whether err is a not-found of any kind.
func IsNotFound(err error) bool { return errors.Is(err, attune.ErrNotFound) }

// ServerError logs err once and answers 500 with the request's id, or 503
// when the database is away, or nothing when the client left.
func (k *Kit) ServerError(w http.ResponseWriter, r *http.Request, err error) {
	if k.ClientGone(w, r, err) {
		return
	}
	if k.DatabaseAway(w, r, err, func(status int, msg string) { k.RenderError(w, r, status, "Try again", msg) }) {
		return
	}
	ri := InfoFrom(r.Context())
	k.Log.ErrorContext(r.Context(), "server error", "request_id", ri.ID, "method", r.Method, "path", r.URL.Path, "err", err)
	k.RenderError(w, r, http.StatusInternalServerError, "Something went wrong",
		"attune could not finish this request. It has been logged as "+ri.ID+"; try again, and tell your admin if it keeps happening.")
}

// statusClientClosed is what a request the client gave up on is logged
// with (as proxies log it): no one reads the response.
const statusClientClosed = 499

// ClientGone handles an error that is only the client going away (a draft
// save the browser cancelled, a page left while it loaded): logged at
// info, as nothing went wrong on attune's side, and not a 500. It reports
// whether it handled err.
func (k *Kit) ClientGone(w http.ResponseWriter, r *http.Request, err error) bool {
	if !errors.Is(err, context.Canceled) || !errors.Is(r.Context().Err(), context.Canceled) {
		return false
	}
	k.Log.InfoContext(r.Context(), "request cancelled by the client", "request_id", InfoFrom(r.Context()).ID,
		"method", r.Method, "path", r.URL.Path, "status", statusClientClosed)
	w.WriteHeader(statusClientClosed)
	return true
}

// RenderError renders the error page with the status.
func (k *Kit) RenderError(w http.ResponseWriter, r *http.Request, status int, heading, message string) {
	k.Render(w, r, status, layout.Error(layout.ErrorPage{
		Chrome:  k.Chrome(r, heading, ""),
		Status:  status,
		Heading: heading,
		Message: message,
	}))
}

// NotFound is the handler of every address no route has.
func (k *Kit) NotFound(w http.ResponseWriter, r *http.Request) error {
	return attune.NotFound("page")
}

// Render writes a templ component as an HTML response with the status.
func (k *Kit) Render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := c.Render(r.Context(), w); err != nil {
		k.Log.ErrorContext(r.Context(), "render", "request_id", InfoFrom(r.Context()).ID, "err", err)
	}
}

// Chrome builds the frame's view model for the current viewer, taking the
// one-time flash message out of the session.
func (k *Kit) Chrome(r *http.Request, title, active string) layout.Chrome {
	c := layout.Chrome{Title: title, Active: active}
	if u := UserFrom(r.Context()); u != nil {
		c.User = &layout.Viewer{Name: u.DisplayName(), Role: string(u.Role), IsAdmin: u.Role == attune.RoleAdmin}
		if msg := k.Sessions.PopString(r.Context(), SessionFlash); msg != "" {
			c.Flash = layout.Flash{Kind: "notice", Message: msg}
		}
		if msg := k.Sessions.PopString(r.Context(), SessionFlashError); msg != "" {
			c.Flash = layout.Flash{Kind: "error", Message: msg}
		}
	}
	return c
}
