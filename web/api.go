package web

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
	"time"
	"unicode/utf8"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/internal/store"
)

// apiHandler is an API handler: it gets the token's user and returns the
// value to send as JSON with a status, or an error.
type apiHandler func(r *http.Request, u *attune.User) (status int, body any, err error)

// apiDownload is the body of a response that streams a file: it writes
// the whole response itself, or returns an error before sending anything.
type apiDownload func(w http.ResponseWriter) error

// apiError is the body of every API error.
type apiError struct {
	Error    string             `json:"error"`
	Fields   map[string]string  `json:"fields,omitempty"`
	Lines    []attune.LineError `json:"lines,omitempty"`
	More     int                `json:"more,omitempty"`
	Problems []apiProblem       `json:"problems,omitempty"`
	Confirm  bool               `json:"confirm_warnings,omitempty"`
}

type apiProblem struct {
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

// api authenticates the bearer token and maps errors to statuses and JSON,
// logging server errors once.
func (s *Server) api(fn apiHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		token, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="attune"`)
			writeJSON(w, http.StatusUnauthorized, apiError{Error: "send a personal API token: Authorization: Bearer TOKEN"})
			return
		}
		u, readOnly, err := s.db.UserByAPIToken(r.Context(), strings.TrimSpace(token))
		if errors.Is(err, attune.ErrUnauthorized) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="attune", error="invalid_token"`)
			writeJSON(w, http.StatusUnauthorized, apiError{Error: "the API token is unknown, revoked, or its account is disabled"})
			return
		}
		if err != nil {
			s.apiServerError(w, r, err)
			return
		}
		infoFrom(r.Context()).userID = u.ID
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
		if d, ok := body.(apiDownload); ok && err == nil {
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
			writeJSON(w, status, body)
			return
		}
		var lp *labelProblems
		var le *attune.LineErrors
		var ve *attune.ValidationError
		var big *tooLarge
		switch {
		case errors.As(err, &big):
			writeJSON(w, http.StatusRequestEntityTooLarge, apiError{Error: big.Error()})
		case errors.As(err, &lp):
			out := apiError{Error: lp.Error(), Confirm: lp.NeedsConfirm}
			for _, is := range lp.Issues {
				out.Problems = append(out.Problems, apiProblem{Item: is.Item, Severity: string(is.Severity), Message: is.Message})
			}
			writeJSON(w, http.StatusUnprocessableEntity, out)
		case errors.As(err, &le):
			writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: "the file has problems; nothing was imported", Lines: le.Errors, More: le.More})
		case errors.As(err, &ve):
			writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: ve.Error(), Fields: ve.Fields})
		case errors.Is(err, attune.ErrNotFound):
			writeJSON(w, http.StatusNotFound, apiError{Error: orDefault(attune.PublicMessage(err), "not found")})
		case errors.Is(err, attune.ErrForbidden):
			writeJSON(w, http.StatusForbidden, apiError{Error: orDefault(attune.PublicMessage(err), "your account may not do this")})
		case errors.Is(err, attune.ErrConflict):
			writeJSON(w, http.StatusConflict, apiError{Error: attune.PublicMessage(err)})
		case errors.Is(err, attune.ErrInvalid):
			writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: orDefault(attune.PublicMessage(err), "invalid request")})
		case errors.Is(err, store.ErrReadsBusy):
			w.Header().Set("Retry-After", readsRetryAfter)
			writeJSON(w, http.StatusServiceUnavailable, apiError{Error: readsBusyMessage})
		case errors.Is(err, store.ErrReadTimeout):
			_, msg := readTimeout(err)
			writeJSON(w, http.StatusServiceUnavailable, apiError{Error: msg})
		default:
			s.apiServerError(w, r, err)
		}
	})
}

// apiRole refuses, with 403, a token whose user's global role is below
// min, as the role check of the pages does before their handler runs.
func apiRole(min attune.Role, fn apiHandler) apiHandler {
	return func(r *http.Request, u *attune.User) (int, any, error) {
		if !u.Role.AtLeast(min) {
			return 0, nil, attune.Forbidden(fmt.Sprintf("this needs the role %s or above; your account is %s", min, u.Role))
		}
		return fn(r, u)
	}
}

func (s *Server) apiServerError(w http.ResponseWriter, r *http.Request, err error) {
	if s.clientGone(w, r, err) {
		return
	}
	if s.databaseAway(w, r, err, func(status int, msg string) { writeJSON(w, status, apiError{Error: msg}) }) {
		return
	}
	ri := infoFrom(r.Context())
	s.log.ErrorContext(r.Context(), "server error", "request_id", ri.id, "method", r.Method, "path", r.URL.Path, "err", err)
	writeJSON(w, http.StatusInternalServerError, apiError{Error: "internal error; it was logged as " + ri.id})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// maxJSONBody bounds a JSON request body (imports are not JSON bodies).
const maxJSONBody = 1 << 20

// decodeJSON reads a JSON request body of at most 1 MiB into v, refusing
// unknown fields so that a typo is an error, not a silently missing value,
// and text that cannot be stored (invalid UTF-8, a NUL), naming its field:
// encoding/json would otherwise turn the one into U+FFFD unseen and pass
// the other on to fail in the database.
func decodeJSON(r *http.Request, v any) error {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody+1))
	if err != nil {
		return attune.Invalid("body", "could not be read: "+err.Error())
	}
	if len(raw) > maxJSONBody {
		return &tooLarge{what: "body", limit: maxJSONBody}
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
				return attune.Invalid(orDefault(path, "body"), p)
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
					return attune.Invalid(orDefault(path, "body"), "a field's name "+p)
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

// pageLimit reads a list's ?limit=: "" is the default page of 50, else a
// size from 1 to store.MaxSearchPage. Every paged list of the API reads
// it here.
func pageLimit(v string) (int, error) {
	if v == "" {
		return browsePageSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > store.MaxSearchPage {
		return 0, attune.Invalid("limit", fmt.Sprintf("give a page size from 1 to %d", store.MaxSearchPage))
	}
	return n, nil
}

// nextCursor is a page's next_cursor as every paged list writes it: null
// on the last page.
func nextCursor(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}

// pathInt reads the id the route names param ("id", "item", "run"…),
// for every page and endpoint alike: anything but a positive whole number
// is not found, as an id no row has is.
func pathInt(r *http.Request, param string) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue(param), 10, 64)
	if err != nil || id <= 0 {
		if what := strings.TrimSuffix(param, "ID"); what != "id" {
			return 0, attune.NotFound(what + " not found")
		}
		return 0, attune.NotFound("not found")
	}
	return id, nil
}

// apiProjectAccess loads a project the user may see, with their role in it.
func (s *Server) apiProjectAccess(ctx context.Context, r *http.Request, u *attune.User) (*attune.Project, attune.MemberRole, error) {
	id, err := pathInt(r, "id")
	if err != nil {
		return nil, "", err
	}
	role, err := s.db.ProjectRole(ctx, id, u)
	if err != nil {
		return nil, "", err
	}
	p, err := s.db.FindProjectByID(ctx, id)
	return p, role, err
}

type apiUser struct {
	ID    int64  `json:"id"`
	Email string `json:"email"`
	Name  string `json:"name"`
	Role  string `json:"role"`
}

func (s *Server) apiMe(r *http.Request, u *attune.User) (int, any, error) {
	return http.StatusOK, apiUser{u.ID, u.Email, u.Name, string(u.Role)}, nil
}

type apiProjectSummary struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	Rubric   string `json:"rubric"`
	Status   string `json:"status"`
	Overlap  int    `json:"overlap"`
	Items    int    `json:"items"`
	Complete int    `json:"complete"`
	Role     string `json:"role"`
}

// apiProjects lists the projects the user can see, archived ones last,
// then by name, a page at a time.
func (s *Server) apiProjects(r *http.Request, u *attune.User) (int, any, error) {
	q := r.URL.Query()
	limit, err := pageLimit(q.Get("limit"))
	if err != nil {
		return 0, nil, err
	}
	ps, next, err := s.db.ProjectPage(r.Context(), u, q.Get("cursor"), limit)
	if err != nil {
		return 0, nil, err
	}
	out := []apiProjectSummary{}
	for _, p := range ps {
		role := p.MemberRole
		if role == "" {
			role = string(attune.MemberLead) // an admin who is not a member
		}
		out = append(out, apiProjectSummary{p.ID, p.Name, p.RubricRef, string(p.Status), p.Overlap, p.Items, p.Complete, role})
	}
	return http.StatusOK, map[string]any{"projects": out, "next_cursor": nextCursor(next)}, nil
}

type apiProgress struct {
	Items         int            `json:"items"`
	Complete      int            `json:"complete"`
	ItemsByLabels []int          `json:"items_by_labels"`
	InProgress    int            `json:"in_progress"`
	LastHour      int            `json:"labels_last_hour"`
	OutOfPool     int            `json:"out_of_pool"`
	Annotators    []apiAnnotator `json:"annotators"`
}

type apiAnnotator struct {
	Email         string  `json:"email"`
	Submitted     int     `json:"submitted"`
	Skipped       int     `json:"skipped"`
	LastHour      int     `json:"last_hour"`
	MedianSeconds float64 `json:"median_seconds_per_item"`
}

type apiProjectDetail struct {
	apiProjectSummary
	Instructions string      `json:"instructions"`
	LeaseSeconds int         `json:"lease_seconds"`
	Progress     apiProgress `json:"progress"`
}

// apiProject returns a project and its progress. Annotators see their own
// row of the per-annotator figures only.
func (s *Server) apiProject(r *http.Request, u *attune.User) (int, any, error) {
	p, role, err := s.apiProjectAccess(r.Context(), r, u)
	if err != nil {
		return 0, nil, err
	}
	out, err := s.projectBody(r.Context(), p, role, u)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}

// projectBody is a project and its progress as the API gives them to
// someone of the role given in it.
func (s *Server) projectBody(ctx context.Context, p *attune.Project, role attune.MemberRole, u *attune.User) (*apiProjectDetail, error) {
	pr, err := s.db.Progress(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	out := &apiProjectDetail{
		apiProjectSummary: apiProjectSummary{p.ID, p.Name, p.RubricRef, string(p.Status), p.Overlap, pr.Items, pr.Complete, string(role)},
		Instructions:      p.Instructions, LeaseSeconds: int(p.Lease.Seconds()),
		Progress: apiProgress{Items: pr.Items, Complete: pr.Complete, ItemsByLabels: pr.ByLabels, InProgress: pr.Active,
			LastHour: pr.LastHour, OutOfPool: pr.Pulled, Annotators: []apiAnnotator{}},
	}
	for _, a := range pr.Annotators {
		if role == attune.MemberLead || a.UserID == u.ID {
			out.Progress.Annotators = append(out.Progress.Annotators, apiAnnotator{a.Email, a.Submitted, a.Skipped, a.LastHour, a.MedianActive.Seconds()})
		}
	}
	return out, nil
}

// apiImport streams the request body into the project: ?format=jsonl|csv
// (detected when absent), ?update=true to replace changed unlabelled items.
func (s *Server) apiImport(r *http.Request, u *attune.User) (int, any, error) {
	p, role, err := s.apiProjectAccess(r.Context(), r, u)
	if err != nil {
		return 0, nil, err
	}
	if role != attune.MemberLead {
		return 0, nil, attune.Forbidden("only the project's leads import data")
	}
	format := dataset.Format(r.URL.Query().Get("format"))
	if format != "" && format != dataset.JSONL && format != dataset.CSV {
		return 0, nil, attune.Invalid("format", "use jsonl or csv")
	}
	limit := s.maxUpload()
	if r.ContentLength > limit {
		return 0, nil, &tooLarge{what: "file", limit: limit}
	}
	res, err := importer.Import(r.Context(), s.db, p, http.MaxBytesReader(nil, r.Body, limit),
		importer.Options{ActorID: &u.ID, Source: "api", Format: format, Update: r.URL.Query().Get("update") == "true"})
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return 0, nil, &tooLarge{what: "file", limit: limit}
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]int{"read": res.Read, "inserted": res.Inserted, "updated": res.Updated, "unchanged": res.Unchanged}, nil
}

type apiAssignment struct {
	Assignment struct {
		ID             int64     `json:"id"`
		LeaseExpiresAt time.Time `json:"lease_expires_at"`
	} `json:"assignment"`
	Rubric string  `json:"rubric"`
	Item   apiItem `json:"item"`
}

type apiItem struct {
	ID       int64            `json:"id"`
	SourceID string           `json:"source_id"`
	Kind     string           `json:"kind"`
	Turns    int              `json:"turns"`
	Messages []attune.Message `json:"messages"`
	Meta     json.RawMessage  `json:"meta"`
	// ContentNote is set when the item is behind a content note: a client
	// shows the note first, and records with POST …/content-note that the
	// person opened it before their answers can be stored.
	ContentNote *apiContentNote `json:"content_note,omitempty"`
}

// apiContentNote says why an item is behind a content note.
type apiContentNote struct {
	Words  []string `json:"words"`  // words of the wellbeing list found in it
	Marked bool     `json:"marked"` // a lead marked it
}

func (s *Server) assignmentBody(ctx context.Context, p *attune.Project, a *attune.Assignment) (*apiAssignment, error) {
	it, err := s.db.FindItem(ctx, p.ID, a.ItemID)
	if err != nil {
		return nil, err
	}
	out := &apiAssignment{Rubric: p.RubricRef, Item: apiItem{ID: it.ID, SourceID: it.SourceID, Kind: it.Kind, Turns: it.Turns,
		Messages: it.Messages, Meta: it.Meta}}
	if f := factsOf(it); f.BehindNote() {
		out.Item.ContentNote = &apiContentNote{Words: append([]string{}, f.Terms...), Marked: f.Marked}
	}
	out.Assignment.ID, out.Assignment.LeaseExpiresAt = a.ID, a.LeaseExpiresAt
	return out, nil
}

// apiNext hands out the annotator's next item: 200 with it, or 204 when
// nothing is left for them.
func (s *Server) apiNext(r *http.Request, u *attune.User) (int, any, error) {
	p, _, err := s.apiProjectAccess(r.Context(), r, u)
	if err != nil {
		return 0, nil, err
	}
	a, err := s.db.NextAssignment(r.Context(), p.ID, u.ID)
	if errors.Is(err, attune.ErrNoWork) {
		return http.StatusNoContent, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	body, err := s.assignmentBody(r.Context(), p, a)
	return http.StatusOK, body, err
}

// apiLabels is the body of a submission or an edit.
type apiLabels struct {
	Answers         map[string]string `json:"answers"`
	Rationales      map[string]string `json:"rationales"`
	Rationale       string            `json:"rationale"`
	ActiveMS        int64             `json:"active_ms"`
	ConfirmWarnings bool              `json:"confirm_warnings"`
	Next            bool              `json:"next"`
}

func (b apiLabels) input() labeling.Input {
	return labeling.Input{Answers: b.Answers, Rationales: b.Rationales, Rationale: b.Rationale, ActiveMS: b.ActiveMS,
		ConfirmWarnings: b.ConfirmWarnings, Next: b.Next}
}

type apiSubmitted struct {
	AnswerSetID int64          `json:"answer_set_id"`
	Created     bool           `json:"created"`
	Score       scoring.Result `json:"score"`
	Next        *apiAssignment `json:"next,omitempty"`
	NextReason  string         `json:"next_reason,omitempty"`
}

// apiSubmit stores the answers of an assignment, validated by the engine as
// the annotator's page validates them. 201 when stored, 200 when the
// assignment had been submitted already (a retry), with the engine's score
// and, when asked for, the next assignment.
func (s *Server) apiSubmit(r *http.Request, u *attune.User) (int, any, error) {
	id, err := pathInt(r, "id")
	if err != nil {
		return 0, nil, err
	}
	var body apiLabels
	if err := decodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	held, res, err := s.labeling.SubmitAssignment(r.Context(), u, id, body.input())
	if err != nil {
		return 0, nil, err
	}
	if res.Different {
		// A retry of the same answers is safe; different ones are never
		// dropped silently.
		return 0, nil, attune.Conflict(fmt.Sprintf("this assignment was submitted already with other answers, which are kept; these were not stored. "+
			"To change them, edit your labels: PUT /api/v1/projects/%d/items/%d/labels", held.Project.ID, held.Item.ID))
	}
	out := apiSubmitted{AnswerSetID: res.AnswerSetID, Created: res.Created, Score: res.Score}
	if res.Next != nil {
		// The next item is claimed in the assignment's project.
		if out.Next, err = s.assignmentBody(r.Context(), held.Project, res.Next); err != nil {
			return 0, nil, err
		}
	} else if res.NextErr != nil {
		out.NextReason = orDefault(attune.PublicMessage(res.NextErr), res.NextErr.Error())
	}
	status := http.StatusCreated
	if !res.Created {
		status = http.StatusOK
	}
	return status, out, nil
}

type apiOwn struct {
	ItemID     int64             `json:"item_id"`
	Answers    map[string]string `json:"answers"`
	Rationales map[string]string `json:"rationales"`
	Rationale  string            `json:"rationale"`
	Revision   int               `json:"revision"`
	Score      scoring.Result    `json:"score"`
}

// apiOwnLabels returns the caller's own labels for an item (never anyone
// else's: labelling is blind).
func (s *Server) apiOwnLabels(r *http.Request, u *attune.User) (int, any, error) {
	p, _, err := s.apiProjectAccess(r.Context(), r, u)
	if err != nil {
		return 0, nil, err
	}
	itemID, err := pathInt(r, "item")
	if err != nil {
		return 0, nil, err
	}
	set, err := s.db.FindOwnAnswerSet(r.Context(), p.ID, itemID, u.ID)
	if err != nil {
		return 0, nil, err
	}
	item, err := s.db.FindItem(r.Context(), p.ID, itemID)
	if err != nil {
		return 0, nil, err
	}
	def, err := s.db.FindRubricByID(r.Context(), p.RubricVersionID)
	if err != nil {
		return 0, nil, err
	}
	answers := rubric.Answers{}
	for k, v := range set.Answers {
		answers[k] = rubric.Value(v)
	}
	score, err := scoring.Score(def, answers, factsOf(item))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, apiOwn{itemID, set.Answers, set.Rationales, set.Rationale, set.Revision, score}, nil
}

// apiUpdateLabels edits the caller's own submitted labels for an item,
// validated as a submission is; the earlier values stay in the history.
func (s *Server) apiUpdateLabels(r *http.Request, u *attune.User) (int, any, error) {
	p, role, err := s.apiProjectAccess(r.Context(), r, u)
	if err != nil {
		return 0, nil, err
	}
	if role != attune.MemberAnnotator {
		return 0, nil, attune.NotFound("you have no labels for this item")
	}
	itemID, err := pathInt(r, "item")
	if err != nil {
		return 0, nil, err
	}
	var body apiLabels
	if err := decodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	ed, err := s.labeling.EditItem(r.Context(), u, p, itemID, body.input())
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"item_id": itemID, "revision": ed.Revision, "score": ed.Score}, nil
}

// apiOpenContentNote records that the caller opened the content note of
// an item they were given or labelled (404 otherwise): their answers to an
// item behind a note are refused until then. 204; opening again changes
// nothing.
func (s *Server) apiOpenContentNote(r *http.Request, u *attune.User) (int, any, error) {
	p, role, err := s.apiProjectAccess(r.Context(), r, u)
	if err != nil {
		return 0, nil, err
	}
	if role != attune.MemberAnnotator {
		return 0, nil, attune.NotFound("item not found")
	}
	itemID, err := pathInt(r, "item")
	if err != nil {
		return 0, nil, err
	}
	if err := s.labeling.OpenNote(r.Context(), u, p.ID, itemID); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// apiSkip gives an assignment back without labels through the labeling
// flow shared with the page, with an optional flag (broken, off-topic,
// distressing, other) and note.
func (s *Server) apiSkip(r *http.Request, u *attune.User) (int, any, error) {
	id, err := pathInt(r, "id")
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		Flag string `json:"flag"`
		Note string `json:"note"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	if err := s.labeling.Skip(r.Context(), u, id, body.Flag, body.Note); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}
