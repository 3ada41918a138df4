package kit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/store"
)

// APIHandler is an API handler: it gets the token's user and returns the
// value to send as JSON with a status, or an error.
type APIHandler func(r *http.Request, u *attune.User) (status int, body any, err error)

// APIDownload is the body of a response that streams a file: it writes
// the whole response itself, or returns an error before sending anything.
type APIDownload func(w http.ResponseWriter) error

// APIError is the body of every API error.
type APIError struct {
	Error    string             `json:"error"`
	Fields   map[string]string  `json:"fields,omitempty"`
	Lines    []attune.LineError `json:"lines,omitempty"`
	More     int                `json:"more,omitempty"`
	Problems []APIProblem       `json:"problems,omitempty"`
	Confirm  bool               `json:"confirm_warnings,omitempty"`
}

// APIProblem is one problem of a refused submission, by item.
type APIProblem struct {
	Item     string `json:"item"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// bearerToken reads the token of an Authorization header of the Bearer
// scheme. The scheme's name is case-insensitive (RFC 9110 §11.1), so
// "bearer" and "BEARER" are the same scheme.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return token, true
}

// API authenticates the bearer token and maps errors to statuses and JSON,
// logging server errors once.
func (k *Kit) API(fn APIHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		token, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="attune"`)
			WriteJSON(w, http.StatusUnauthorized, APIError{Error: "send a personal API token: Authorization: Bearer TOKEN"})
			return
		}
		u, readOnly, err := k.DB.UserByAPIToken(r.Context(), strings.TrimSpace(token))
		if errors.Is(err, attune.ErrUnauthorized) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="attune", error="invalid_token"`)
			WriteJSON(w, http.StatusUnauthorized, APIError{Error: "the API token is unknown, revoked, or its account is disabled"})
			return
		}
		if err != nil {
			k.APIServerError(w, r, err)
			return
		}
		InfoFrom(r.Context()).UserID = u.ID
		var status int
		var body any
		if readOnly && r.Method != http.MethodGet && r.Method != http.MethodHead {
			// Checked before any handler runs, so no endpoint can forget
			// it: a read-only token reads and nothing else, not even a
			// POST that stores nothing but spends on a model (a try).
			err = attune.Forbidden("this API token is read-only: it may only read (GET)")
		} else {
			status, body, err = fn(r, u)
		}
		if d, ok := body.(APIDownload); ok && err == nil {
			// A download writes its own response; an error it returns
			// came before any byte was sent.
			if err = d(w); err == nil {
				return
			}
		}
		if err == nil {
			if body == nil {
				w.WriteHeader(status)
				return
			}
			WriteJSON(w, status, body)
			return
		}
		var lp *labeling.Problems
		var le *attune.LineErrors
		var ve *attune.ValidationError
		var big *TooLarge
		switch {
		case errors.As(err, &big):
			WriteJSON(w, http.StatusRequestEntityTooLarge, APIError{Error: big.Error()})
		case errors.As(err, &lp):
			out := APIError{Error: lp.Error(), Confirm: lp.NeedsConfirm}
			for _, is := range lp.Issues {
				out.Problems = append(out.Problems, APIProblem{Item: is.Item, Severity: string(is.Severity), Message: is.Message})
			}
			WriteJSON(w, http.StatusUnprocessableEntity, out)
		case errors.As(err, &le):
			WriteJSON(w, http.StatusUnprocessableEntity, APIError{Error: "the file has problems; nothing was imported", Lines: le.Errors, More: le.More})
		case errors.As(err, &ve):
			WriteJSON(w, http.StatusUnprocessableEntity, APIError{Error: ve.Error(), Fields: ve.Fields})
		case errors.Is(err, attune.ErrNotFound):
			WriteJSON(w, http.StatusNotFound, APIError{Error: OrDefault(attune.PublicMessage(err), "not found")})
		case errors.Is(err, attune.ErrForbidden):
			WriteJSON(w, http.StatusForbidden, APIError{Error: OrDefault(attune.PublicMessage(err), "your account may not do this")})
		case errors.Is(err, attune.ErrConflict):
			WriteJSON(w, http.StatusConflict, APIError{Error: attune.PublicMessage(err)})
		case errors.Is(err, attune.ErrInvalid):
			WriteJSON(w, http.StatusUnprocessableEntity, APIError{Error: OrDefault(attune.PublicMessage(err), "invalid request")})
		case errors.Is(err, store.ErrReadsBusy):
			w.Header().Set("Retry-After", ReadsRetryAfter)
			WriteJSON(w, http.StatusServiceUnavailable, APIError{Error: ReadsBusyMessage})
		case errors.Is(err, store.ErrReadTimeout):
			_, msg := ReadTimeout(err)
			WriteJSON(w, http.StatusServiceUnavailable, APIError{Error: msg})
		default:
			k.APIServerError(w, r, err)
		}
	})
}

// APIRole refuses, with 403, a token whose user's global role is below
// min, as the role check of the pages does before their handler runs.
func APIRole(min attune.Role, fn APIHandler) APIHandler {
	return func(r *http.Request, u *attune.User) (int, any, error) {
		if !u.Role.AtLeast(min) {
			return 0, nil, attune.Forbidden(fmt.Sprintf("this needs the role %s or above; your account is %s", min, u.Role))
		}
		return fn(r, u)
	}
}

// APIServerError logs err once and answers 500 in JSON with the request's id,
// or 503 when the database is away, or nothing when the client left.
func (k *Kit) APIServerError(w http.ResponseWriter, r *http.Request, err error) {
	if k.ClientGone(w, r, err) {
		return
	}
	if k.DatabaseAway(w, r, err, func(status int, msg string) { WriteJSON(w, status, APIError{Error: msg}) }) {
		return
	}
	ri := InfoFrom(r.Context())
	k.Log.ErrorContext(r.Context(), "server error", "request_id", ri.ID, "method", r.Method, "path", r.URL.Path, "err", err)
	WriteJSON(w, http.StatusInternalServerError, APIError{Error: "internal error; it was logged as " + ri.ID})
}

// WriteJSON answers v as JSON with the status; HTML-special characters are
// not escaped, as no page embeds the answer.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// maxJSONBody bounds a JSON request body (imports are not JSON bodies).
const maxJSONBody = 1 << 20

// DecodeJSON reads a JSON request body of at most 1 MiB into v, refusing
// unknown fields so that a typo is an error, not a silently missing value,
// and text that cannot be stored (invalid UTF-8, a NUL), naming its field:
// encoding/json would otherwise turn the one into U+FFFD unseen and pass
// the other on to fail in the database.
func DecodeJSON(r *http.Request, v any) error {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody+1))
	if err != nil {
		return attune.Invalid("body", "could not be read: "+err.Error())
	}
	if len(raw) > maxJSONBody {
		return &TooLarge{What: "body", Limit: maxJSONBody}
	}
	if err := jsonText(raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return attune.Invalid("body", "not the expected JSON: "+err.Error())
	}
	return nil
}

// jsonText finds a string (a key or a value) in a JSON document that is
// not storable text and names it by its path ("rationales.safety"). A NUL
// can only be written as the escape \u0000, so documents without one and
// with valid UTF-8 — nearly all — are not walked.
func jsonText(raw []byte) error {
	valid := utf8.Valid(raw)
	if valid && !bytes.Contains(raw, []byte(`\u0000`)) {
		return nil
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil // not JSON: the typed decode says so
	}
	// Invalid bytes decode as U+FFFD: where one shows, the bytes were bad
	// (or the text held U+FFFD, which is then the best guess there is).
	bad := func(s string) string {
		if p := attune.TextProblem(s); p != "" {
			return p
		}
		if !valid && strings.ContainsRune(s, utf8.RuneError) {
			return "is not valid UTF-8 text"
		}
		return ""
	}
	var walk func(path string, v any) error
	walk = func(path string, v any) error {
		switch x := v.(type) {
		case string:
			if p := bad(x); p != "" {
				return attune.Invalid(OrDefault(path, "body"), p)
			}
		case []any:
			for i, e := range x {
				if err := walk(fmt.Sprintf("%s[%d]", path, i), e); err != nil {
					return err
				}
			}
		case map[string]any:
			for k, e := range x {
				sub := k
				if path != "" {
					sub = path + "." + k
				}
				if p := bad(k); p != "" {
					return attune.Invalid(OrDefault(path, "body"), "a field's name "+p)
				}
				if err := walk(sub, e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk("", doc); err != nil {
		return err
	}
	if !valid {
		return attune.Invalid("body", "is not valid UTF-8 text")
	}
	return nil
}

// PageLimit reads a list's ?limit=: "" is the default page of 50, else a
// size from 1 to store.MaxSearchPage. Every paged list of the API reads
// it here.
func PageLimit(v string) (int, error) {
	if v == "" {
		return DefaultPageSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > store.MaxSearchPage {
		return 0, attune.Invalid("limit", fmt.Sprintf("give a page size from 1 to %d", store.MaxSearchPage))
	}
	return n, nil
}

// NextCursor is a page's next_cursor as every paged list writes it: null
// on the last page.
func NextCursor(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}

// PathInt reads the id the route names param ("id", "item", "run"…),
// for every page and endpoint alike: anything but a positive whole number
// is not found, as an id no row has is.
func PathInt(r *http.Request, param string) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue(param), 10, 64)
	if err != nil || id <= 0 {
		if what := strings.TrimSuffix(param, "ID"); what != "id" {
			return 0, attune.NotFound(what + " not found")
		}
		return 0, attune.NotFound("not found")
	}
	return id, nil
}

// APIProjectAccess loads a project the user may see, with their role in it.
// APIProjectAccess loads the project of the path for a token's user with
// the user's standing in it; a project the user is not a member of is not
// found.
func (k *Kit) APIProjectAccess(ctx context.Context, r *http.Request, u *attune.User) (*attune.Project, attune.MemberRole, error) {
	id, err := PathInt(r, "id")
	if err != nil {
		return nil, "", err
	}
	role, err := k.DB.ProjectRole(ctx, id, u)
	if err != nil {
		return nil, "", err
	}
	p, err := k.DB.FindProjectByID(ctx, id)
	return p, role, err
}

// DefaultPageSize is how many rows a page of a list holds when the request
// names no size.
const DefaultPageSize = 50

// Page is what a request asks of a paged list: the page after Cursor ("":
// the first), of Limit rows, read from ?cursor= and ?limit= as every list
// of the API reads them.
type Page struct {
	Cursor string
	Limit  int
}

// ReadPage reads the list page a request asks for (PageLimit's sizes).
func ReadPage(r *http.Request) (Page, error) {
	q := r.URL.Query()
	limit, err := PageLimit(q.Get("limit"))
	return Page{Cursor: q.Get("cursor"), Limit: limit}, err
}

// ListPage answers one page of a list as every paged list of the API
// does: 200 with the rows under name, each as row writes it ([] for
// none), and next_cursor, null on the last page.
func ListPage[T, J any](name string, rows []T, next string, row func(T) J) (int, any, error) {
	out := make([]J, 0, len(rows))
	for _, x := range rows {
		out = append(out, row(x))
	}
	return http.StatusOK, map[string]any{name: out, "next_cursor": NextCursor(next)}, nil
}
