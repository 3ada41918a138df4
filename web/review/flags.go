package review

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	flagview "github.com/attune/attune/web/views/flag"
)

// flagsPageSize bounds the flags one page lists; the export has them all.
const flagsPageSize = 500

// The Flags page, where leads read the flags annotators raised, the post
// that resolves one, and the post that puts an item back in the pool are
// for the project's leads (and admins) only: kit.ProjectAccess with manage
// gives a member who is an annotator 403 and anyone else 404, so that
// nobody else ever reads another person's flag (routes in web/routes.go).

// FlagsPage lists the project's flags, filtered by reason and status
// (open by default), with the items out of the pool and the export.
func (s *Handler) FlagsPage(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	q := r.URL.Query()
	reason, err := attune.ParseFlagReason(q.Get("reason"))
	if err != nil {
		return err
	}
	statusText := q.Get("status")
	if !q.Has("status") {
		statusText = string(attune.FlagOpen)
	}
	status, err := attune.ParseFlagStatus(statusText)
	if err != nil {
		return err
	}
	flags, err := s.DB.ListFlags(ctx, store.FlagFilter{ProjectID: p.ID, Reason: reason, Status: status, Limit: flagsPageSize + 1})
	if err != nil {
		return err
	}
	counts, err := s.DB.CountFlags(ctx, p.ID)
	if err != nil {
		return err
	}
	pulled, err := s.DB.ListPulledItems(ctx, p.ID, flagsPageSize)
	if err != nil {
		return err
	}
	page := flagview.Page{
		Chrome:      s.Chrome(r, "Flags · "+p.Name, "home"),
		ProjectName: p.Name,
		Project:     templ.SafeURL(kit.ProjectPath(p.ID)),
		Import:      templ.SafeURL(kit.ProjectPath(p.ID) + "#import"),
		Action:      templ.SafeURL(kit.FlagsPath(p.ID)),
		Counts:      kit.FlagCounts(counts),
		Filter:      flagFilterQuery(reason, status),
		Limit:       flagsPageSize,
		CSV:         templ.SafeURL(exportPath(p.ID, export.Flags, export.CSV)),
		JSONL:       templ.SafeURL(exportPath(p.ID, export.Flags, export.JSONL)),
	}
	page.Reasons = append(page.Reasons, flagview.Choice{Value: "", Label: "Every reason", Selected: reason == ""})
	for _, f := range attune.Flags {
		page.Reasons = append(page.Reasons, flagview.Choice{Value: f, Label: kit.FlagLabels[f], Selected: reason == f})
	}
	for _, c := range []struct {
		v     attune.FlagStatus
		label string
	}{{attune.FlagOpen, "Open"}, {attune.FlagResolved, "Resolved"}, {"all", "Open and resolved"}} {
		page.Statuses = append(page.Statuses, flagview.Choice{Value: string(c.v), Label: c.label,
			Selected: status == c.v || status == "" && c.v == "all"})
	}
	if len(flags) > flagsPageSize {
		flags, page.Truncated = flags[:flagsPageSize], true
	}
	for _, f := range flags {
		row := flagview.Row{
			ID: f.ID, ItemID: f.ItemSourceID, ItemURL: templ.SafeURL(adjudicatePath(p.ID, f.ItemID)),
			Reason: f.Reason, ReasonLabel: kit.FlagNames[f.Reason], Note: f.Note, Annotator: f.Annotator,
			FlaggedAt: kit.ShortTime(f.FlaggedAt), Resolution: string(f.Resolution), ResolvedBy: f.ResolvedBy,
			ResolvedAt: kit.ShortTime(f.ResolvedAt), ResolutionNote: f.ResolutionNote, InPool: f.ItemInPool, Labelled: f.ItemLabelled,
		}
		if f.Status() == attune.FlagOpen {
			row.Resolve = templ.SafeURL(fmt.Sprintf("%s/%d/resolve", kit.FlagsPath(p.ID), f.ID))
		}
		if !f.ItemInPool {
			row.Return = returnPath(p.ID, f.ItemID)
		}
		page.Rows = append(page.Rows, row)
	}
	for _, it := range pulled {
		page.Pulled = append(page.Pulled, flagview.PulledItem{
			ItemID: it.SourceID, ItemURL: templ.SafeURL(adjudicatePath(p.ID, it.ItemID)),
			PulledAt: kit.ShortTime(it.PulledAt), PulledBy: it.PulledBy, Return: returnPath(p.ID, it.ItemID),
		})
	}
	s.Render(w, r, http.StatusOK, flagview.View(page))
	return nil
}

func returnPath(projectID, itemID int64) templ.SafeURL {
	return templ.SafeURL(fmt.Sprintf("%s/items/%d/return", kit.FlagsPath(projectID), itemID))
}

// ResolveFlag settles one open flag as the lead chose, then returns to the
// Flags page as it was filtered.
func (s *Handler) ResolveFlag(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	flagID, err := kit.PathInt(r, "flag")
	if err != nil {
		return err
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
	how, err := attune.ParseFlagResolution(r.PostFormValue("how"))
	if err != nil {
		return err
	}
	res, err := s.DB.ResolveFlag(ctx, store.FlagResolution{ActorID: kit.UserFrom(ctx).ID, ProjectID: p.ID, FlagID: flagID, How: how,
		Note: strings.TrimSpace(r.PostFormValue("note"))})
	if err != nil {
		return err
	}
	var msg string
	switch how {
	case attune.ResolvePulled:
		msg = fmt.Sprintf("Took %s out of the pool: nobody is handed it any more.", res.ItemSourceID)
	case attune.ResolveFixed:
		msg = fmt.Sprintf("Marked %s fixed.", res.ItemSourceID)
		if res.Returned {
			msg += " It is back in the pool."
		}
	default:
		msg = fmt.Sprintf("Dismissed the flag on %s.", res.ItemSourceID)
	}
	if how != attune.ResolveDismissed && res.Flags > 1 {
		msg += fmt.Sprintf(" That resolved its %d open flags.", res.Flags)
	}
	s.Flash(ctx, msg)
	http.Redirect(w, r, backToFlags(r, p.ID), http.StatusSeeOther)
	return nil
}

// ReturnItem puts an item out of the pool back in.
func (s *Handler) ReturnItem(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return err
	}
	changed, source, err := s.DB.SetItemInPool(ctx, kit.UserFrom(ctx).ID, p.ID, itemID, true)
	if err != nil {
		return err
	}
	msg := source + " was in the pool already."
	if changed {
		msg = source + " is back in the pool: annotators are handed it again."
	}
	s.Flash(ctx, msg)
	http.Redirect(w, r, backToFlags(r, p.ID), http.StatusSeeOther)
	return nil
}

// flagFilterQuery writes a filter of the Flags page as a query string.
func flagFilterQuery(reason string, status attune.FlagStatus) string {
	q := url.Values{}
	if reason != "" {
		q.Set("reason", reason)
	}
	if status == "" {
		status = "all"
	}
	q.Set("status", string(status))
	return q.Encode()
}

// backToFlags is the Flags page with the filter a form sent back, when it
// reads as one; else the page as it opens.
func backToFlags(r *http.Request, projectID int64) string {
	back := kit.FlagsPath(projectID)
	q, err := url.ParseQuery(r.PostFormValue("back"))
	if err != nil {
		return back
	}
	reason, err := attune.ParseFlagReason(q.Get("reason"))
	if err != nil {
		return back
	}
	status, err := attune.ParseFlagStatus(q.Get("status"))
	if err != nil || !q.Has("status") {
		return back
	}
	return back + "?" + flagFilterQuery(reason, status)
}

// apiFlag is a flag as the API sends it.
type apiFlag struct {
	ID             int64      `json:"id"`
	ItemID         int64      `json:"item_id"`
	SourceID       string     `json:"source_id"`
	Reason         string     `json:"reason"`
	Note           string     `json:"note"`
	Annotator      string     `json:"annotator"`
	FlaggedAt      time.Time  `json:"flagged_at"`
	Status         string     `json:"status"`
	Resolution     *string    `json:"resolution"`
	ResolvedBy     *string    `json:"resolved_by"`
	ResolvedAt     *time.Time `json:"resolved_at"`
	ResolutionNote string     `json:"resolution_note"`
	InPool         bool       `json:"in_pool"`
}

// APIFlags lists the project's flags, newest first, a page at a time, for
// its leads only: ?reason= one of the flag reasons, ?status=open|resolved
// (both when absent), ?limit= and ?cursor= as the items search pages. An
// annotator of the project gets 403; anyone else 404.
func (s *Handler) APIFlags(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "read its flags")
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	reason, err := attune.ParseFlagReason(q.Get("reason"))
	if err != nil {
		return 0, nil, err
	}
	status, err := attune.ParseFlagStatus(q.Get("status"))
	if err != nil {
		return 0, nil, err
	}
	page, err := kit.ReadPage(r)
	if err != nil {
		return 0, nil, err
	}
	flags, next, err := s.DB.FlagPage(r.Context(), store.FlagFilter{ProjectID: p.ID, Reason: reason, Status: status}, page.Cursor, page.Limit)
	if err != nil {
		return 0, nil, err
	}
	out := apiFlagList{Flags: make([]apiFlag, 0, len(flags))}
	for _, f := range flags {
		out.Flags = append(out.Flags, apiFlagOf(f))
	}
	out.NextCursor = kit.NextCursor(next)
	return http.StatusOK, out, nil
}

// apiFlagList is a page of flags and the cursor of the next ("null" on
// the last), as every list of the API pages.
type apiFlagList struct {
	Flags      []apiFlag `json:"flags"`
	NextCursor *string   `json:"next_cursor"`
}

// apiFlagOf is a flag as the API writes it.
func apiFlagOf(f attune.Flag) apiFlag {
	af := apiFlag{ID: f.ID, ItemID: f.ItemID, SourceID: f.ItemSourceID, Reason: f.Reason, Note: f.Note, Annotator: f.Annotator,
		FlaggedAt: f.FlaggedAt.UTC(), Status: string(f.Status()), ResolutionNote: f.ResolutionNote, InPool: f.ItemInPool}
	if f.Resolution != "" {
		how, by, at := string(f.Resolution), f.ResolvedBy, f.ResolvedAt.UTC()
		af.Resolution, af.ResolvedBy, af.ResolvedAt = &how, &by, &at
	}
	return af
}

// APIResolveFlag settles an open flag of the project (its leads), as the
// Flags page does: {"how": "pulled|fixed|dismissed", "note": "…"}. 200
// with what it did; a flag resolved already is a 409.
func (s *Handler) APIResolveFlag(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "resolve its flags")
	if err != nil {
		return 0, nil, err
	}
	flagID, err := kit.PathInt(r, "flag")
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		How  string `json:"how"`
		Note string `json:"note"`
	}
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	how, err := attune.ParseFlagResolution(body.How)
	if err != nil {
		return 0, nil, err
	}
	res, err := s.DB.ResolveFlag(r.Context(), store.FlagResolution{ActorID: u.ID, ProjectID: p.ID, FlagID: flagID, How: how,
		Note: strings.TrimSpace(body.Note)})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"source_id": res.ItemSourceID, "resolution": how, "flags_resolved": res.Flags,
		"pulled": res.Pulled, "returned": res.Returned}, nil
}

// APISetInPool takes an item out of the pool or puts it back (the
// project's leads): {"in_pool": false}. Out of the pool, nobody is handed
// it and it leaves the progress figures; the Flags page's "return to the
// pool" is {"in_pool": true}. 200 with the item's state and whether it
// changed.
func (s *Handler) APISetInPool(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "take items out of the pool")
	if err != nil {
		return 0, nil, err
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		InPool *bool `json:"in_pool"`
	}
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	if body.InPool == nil {
		return 0, nil, attune.Invalid("in_pool", "say whether the item is in the pool: true or false")
	}
	changed, source, err := s.DB.SetItemInPool(r.Context(), u.ID, p.ID, itemID, *body.InPool)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"source_id": source, "in_pool": *body.InPool, "changed": changed}, nil
}
