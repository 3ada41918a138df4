package projects

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
)

// apiProjectInput is the body that creates a project, and, with every
// field optional, changes one. The rules are the project forms': the same
// attune.Project.Validate and attune.ReadEpsilon.
type apiProjectInput struct {
	Name         *string `json:"name"`
	Rubric       *string `json:"rubric"` // key@version; only when creating
	Instructions *string `json:"instructions"`
	Overlap      *int    `json:"overlap"`
	LeaseSeconds *int64  `json:"lease_seconds"`
	// Annotators is who the annotators are (experts, trained, crowd),
	// which sets the alt-test's ε; Epsilon sets it directly.
	Annotators *string  `json:"annotators"`
	Epsilon    *float64 `json:"epsilon"`
	Status     *string  `json:"status"` // active, paused or archived; only when changing
	// SystemKey is the item meta key that names an item's system.
	SystemKey *string `json:"system_key"`
	// EvidencePolicy is the turn evidence setting: off, optional or
	// required.
	EvidencePolicy *string `json:"evidence_policy"`
	// The probe thresholds (probe.ThresholdFields), each optional.
	ProbeRetestChange *float64 `json:"probe_retest_change"`
	ProbePerturbMove  *float64 `json:"probe_perturb_move"`
	ProbeMinItems     *int     `json:"probe_min_items"`
	ProbeLengthSlope  *float64 `json:"probe_length_slope"`
}

// apply checks the input laid over p and the probe thresholds t (the
// defaults of a new project, or the project as it is) and returns what
// they come to, the thresholds nil when none is given, or the fields'
// errors.
func (in apiProjectInput) apply(p attune.Project, t probe.Thresholds) (attune.Project, *probe.Thresholds, error) {
	errs := map[string]string{}
	var thresholds *probe.Thresholds
	if in.ProbeRetestChange != nil || in.ProbePerturbMove != nil || in.ProbeMinItems != nil || in.ProbeLengthSlope != nil {
		for to, from := range map[*float64]*float64{&t.RetestChange: in.ProbeRetestChange, &t.PerturbMove: in.ProbePerturbMove, &t.LengthSlope: in.ProbeLengthSlope} {
			if from != nil {
				*to = *from
			}
		}
		if in.ProbeMinItems != nil {
			t.MinItems = *in.ProbeMinItems
		}
		thresholds = &t
		var ve *attune.ValidationError
		if errors.As(t.Validate(), &ve) {
			maps.Copy(errs, ve.Fields)
		}
	}
	if in.Name != nil {
		p.Name = *in.Name
	}
	if in.Instructions != nil {
		p.Instructions = *in.Instructions
	}
	if in.Overlap != nil {
		p.Overlap = *in.Overlap
	}
	if in.SystemKey != nil {
		p.SystemKey = strings.TrimSpace(*in.SystemKey)
	}
	if in.EvidencePolicy != nil {
		// Given empty it is refused, not read as "keep": Validate reads
		// an empty setting as the default, which a PATCH would keep.
		p.EvidencePolicy = rubric.EvidencePolicy(strings.TrimSpace(*in.EvidencePolicy))
		if p.EvidencePolicy == "" {
			errs["evidence_policy"] = attune.ProjectFieldMessage("evidence_policy")
		}
	}
	if in.LeaseSeconds != nil {
		// Out of attune.MaxLease's range it is refused by Validate, as
		// -1; multiplied, it could wrap into the range.
		p.Lease = -1
		if n := *in.LeaseSeconds; n >= 0 && n <= int64(attune.MaxLease/time.Second) {
			p.Lease = time.Duration(n) * time.Second
		}
	}
	if in.Annotators != nil || in.Epsilon != nil {
		var annotators, custom string
		if in.Annotators != nil {
			annotators = *in.Annotators
		}
		if in.Epsilon != nil {
			annotators, custom = attune.AnnotatorsCustom, strconv.FormatFloat(*in.Epsilon, 'f', -1, 64)
			if in.Annotators != nil {
				errs["epsilon"] = "give annotators or epsilon, not both"
			}
		}
		if e, ok, msg := attune.ReadEpsilon(annotators, custom); !ok {
			field := "epsilon"
			if in.Annotators != nil {
				field = "annotators"
			}
			errs[field] = msg
		} else {
			p.Epsilon = e
		}
	}
	if err := p.Validate(); err != nil {
		var ve *attune.ValidationError
		if !errors.As(err, &ve) {
			return p, nil, err
		}
		for k, m := range ve.Fields {
			if k == "lease" {
				k = "lease_seconds"
			}
			errs[k] = m
		}
	}
	if len(errs) > 0 {
		return p, nil, &attune.ValidationError{Fields: errs}
	}
	return p, thresholds, nil
}

// APICreateProject makes a project, led by the token's user (leads and
// admins): 201 with the project as GET returns it.
func (s *Handler) APICreateProject(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	var in apiProjectInput
	if err := kit.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Status != nil {
		return 0, nil, attune.Invalid("status", "a new project is active; change its status afterwards")
	}
	if in.Rubric == nil || *in.Rubric == "" {
		return 0, nil, attune.Invalid("rubric", "name the rubric version the project labels with, as key@version")
	}
	ref, err := rubric.ParseRef(*in.Rubric)
	if err != nil || ref.Version == "" {
		return 0, nil, attune.Invalid("rubric", "name the rubric version as key@version, such as coaching-conversation@2.0")
	}
	_, rv, err := s.DB.FindRubric(ctx, ref)
	if errors.Is(err, attune.ErrNotFound) {
		return 0, nil, attune.Invalid("rubric", "no rubric version "+ref.String()+" is loaded")
	}
	if err != nil {
		return 0, nil, err
	}
	p, thresholds, err := in.apply(attune.Project{Overlap: attune.DefaultOverlap, Lease: attune.DefaultLease, Epsilon: attune.DefaultEpsilon,
		SystemKey: attune.DefaultSystemKey}, probe.DefaultThresholds())
	if err != nil {
		return 0, nil, err
	}
	created, err := s.DB.CreateProject(ctx, &u.ID, store.NewProject{Name: p.Name, Instructions: p.Instructions,
		RubricVersionID: rv.ID, Overlap: p.Overlap, Lease: p.Lease, Epsilon: p.Epsilon, SystemKey: p.SystemKey,
		EvidencePolicy: p.EvidencePolicy, ProbeThresholds: thresholds})
	if err != nil {
		return 0, nil, err
	}
	body, err := s.projectBody(ctx, created, attune.MemberLead, u)
	return http.StatusCreated, body, err
}

// APIUpdateProject changes a project's settings and, with status, pauses,
// archives or reopens it (the project's leads): the fields given change,
// the others stay. 200 with the project as GET returns it.
func (s *Handler) APIUpdateProject(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	p, err := s.APILeadProject(r, u, "change it")
	if err != nil {
		return 0, nil, err
	}
	var in apiProjectInput
	if err := kit.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Rubric != nil {
		return 0, nil, attune.Invalid("rubric", "a project's rubric cannot change; make a new project for another rubric")
	}
	var status attune.ProjectStatus
	if in.Status != nil {
		switch status = attune.ProjectStatus(*in.Status); status {
		case attune.ProjectActive, attune.ProjectPaused, attune.ProjectArchived:
		default:
			return 0, nil, attune.Invalid("status", "choose active, paused or archived")
		}
	}
	stored, err := s.DB.ProbeThresholds(ctx, p.ID)
	if err != nil {
		return 0, nil, err
	}
	next, thresholds, err := in.apply(*p, stored)
	if err != nil {
		return 0, nil, err
	}
	if err := s.DB.UpdateProject(ctx, u.ID, p.ID, store.ProjectChanges{Name: next.Name, Instructions: next.Instructions,
		Overlap: next.Overlap, Lease: next.Lease, Epsilon: next.Epsilon, SystemKey: next.SystemKey,
		EvidencePolicy: next.EvidencePolicy, ProbeThresholds: thresholds}); err != nil {
		return 0, nil, err
	}
	if status != "" && status != p.Status {
		if err := s.DB.SetProjectStatus(ctx, u.ID, p.ID, status); err != nil {
			return 0, nil, err
		}
	}
	if p, err = s.DB.FindProjectByID(ctx, p.ID); err != nil {
		return 0, nil, err
	}
	body, err := s.projectBody(ctx, p, attune.MemberLead, u)
	return http.StatusOK, body, err
}

type apiMember struct {
	UserID    int64     `json:"user_id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	AddedAt   time.Time `json:"added_at"`
	Paused    bool      `json:"paused"`
	PausedWhy string    `json:"paused_why"`
}

func apiMemberOf(m attune.Member) apiMember {
	return apiMember{m.UserID, m.Email, m.Name, string(m.Role), m.AddedAt.UTC(), m.Paused, m.PausedWhy}
}

// APIMembers lists the project's members (its leads).
func (s *Handler) APIMembers(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "manage its members")
	if err != nil {
		return 0, nil, err
	}
	page, err := kit.ReadPage(r)
	if err != nil {
		return 0, nil, err
	}
	members, next, err := s.DB.MemberPage(r.Context(), p.ID, page.Cursor, page.Limit)
	if err != nil {
		return 0, nil, err
	}
	return kit.ListPage("members", members, next, apiMemberOf)
}

// APIAddMember adds an account, by email, as an annotator or a lead of the
// project (201 with the member), or gives a member that role (200).
func (s *Handler) APIAddMember(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	p, err := s.APILeadProject(r, u, "manage its members")
	if err != nil {
		return 0, nil, err
	}
	var in struct {
		Email string `json:"email"`
		Role  string `json:"role"`
	}
	if err := kit.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	role := attune.MemberRole(in.Role)
	if role != attune.MemberAnnotator && role != attune.MemberLead {
		return 0, nil, attune.Invalid("role", "choose annotator or lead")
	}
	email, err := attune.NormalizeEmail(in.Email)
	if err != nil {
		return 0, nil, attune.Invalid("email", "give the email address of the person's account")
	}
	who, err := s.DB.FindUserByEmail(ctx, email)
	if kit.IsNotFound(err) {
		return 0, nil, attune.Invalid("email", "no account has the email "+email+"; an admin creates accounts")
	}
	if err != nil {
		return 0, nil, err
	}
	status := http.StatusCreated
	if _, err := s.findMember(ctx, p.ID, who.ID); err == nil {
		status = http.StatusOK // a member already: their role changes
	}
	if err := s.DB.AddMember(ctx, &u.ID, p.ID, who.ID, role); err != nil {
		return 0, nil, err
	}
	m, err := s.findMember(ctx, p.ID, who.ID)
	if err != nil {
		return 0, nil, err
	}
	return status, apiMemberOf(*m), nil
}

// APIRemoveMember takes a person out of the project; their labels stay.
// The project's only lead cannot be removed (409).
func (s *Handler) APIRemoveMember(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	p, err := s.APILeadProject(r, u, "manage its members")
	if err != nil {
		return 0, nil, err
	}
	uid, err := kit.PathInt(r, "userID")
	if err != nil {
		return 0, nil, err
	}
	if _, err := s.findMember(ctx, p.ID, uid); err != nil {
		return 0, nil, err
	}
	if err := s.DB.RemoveMember(ctx, &u.ID, p.ID, uid); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// findMember is one member of the project, or attune.ErrNotFound.
func (s *Handler) findMember(ctx context.Context, projectID, userID int64) (*attune.Member, error) {
	members, err := s.DB.ListMembers(ctx, projectID)
	if err != nil {
		return nil, err
	}
	for i := range members {
		if members[i].UserID == userID {
			return &members[i], nil
		}
	}
	return nil, attune.NotFound("no such member of the project")
}

// APIPauseQueue pauses one annotator's queue, with a reason they are
// told, or resumes it (the project's leads), as the project page does:
// {"paused": true, "why": "…"}. 200 with the member.
func (s *Handler) APIPauseQueue(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	p, err := s.APILeadProject(r, u, "manage its members")
	if err != nil {
		return 0, nil, err
	}
	uid, err := kit.PathInt(r, "userID")
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		Paused bool   `json:"paused"`
		Why    string `json:"why"`
	}
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	if _, err := s.findMember(ctx, p.ID, uid); err != nil {
		return 0, nil, err
	}
	if err := s.DB.SetQueuePaused(ctx, &u.ID, p.ID, uid, body.Paused, strings.TrimSpace(body.Why)); err != nil {
		return 0, nil, err
	}
	m, err := s.findMember(ctx, p.ID, uid)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, apiMemberOf(*m), nil
}

// APIMarkSensitive marks items of the project, by their ids in the
// dataset, as sensitive (announced with a content note), or clears the
// mark with clear (the project's leads), as the project page does. 200
// with how many items changed and the ids no item has.
func (s *Handler) APIMarkSensitive(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "mark its items")
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		IDs   []string `json:"ids"`
		Clear bool     `json:"clear"`
	}
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	var ids []string
	for _, id := range body.IDs {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	switch {
	case len(ids) == 0:
		return 0, nil, attune.Invalid("ids", "give the ids of the items in the dataset")
	case len(ids) > maxSensitiveList:
		return 0, nil, attune.Invalid("ids", fmt.Sprintf("mark at most %d items at once (this list has %d)", maxSensitiveList, len(ids)))
	}
	changed, unknown, err := s.DB.MarkSensitive(r.Context(), u.ID, p.ID, ids, !body.Clear)
	if err != nil {
		return 0, nil, err
	}
	if unknown == nil {
		unknown = []string{}
	}
	return http.StatusOK, map[string]any{"changed": changed, "unknown": unknown}, nil
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

// APIProjects lists the projects the user can see, archived ones last,
// then by name, a page at a time.
func (s *Handler) APIProjects(r *http.Request, u *attune.User) (int, any, error) {
	page, err := kit.ReadPage(r)
	if err != nil {
		return 0, nil, err
	}
	ps, next, err := s.DB.ProjectPage(r.Context(), u, page.Cursor, page.Limit)
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
	return http.StatusOK, map[string]any{"projects": out, "next_cursor": kit.NextCursor(next)}, nil
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
	Instructions string `json:"instructions"`
	LeaseSeconds int    `json:"lease_seconds"`
	SystemKey    string `json:"system_key"`
	// EvidencePolicy is the turn evidence setting: off, optional or
	// required.
	EvidencePolicy string `json:"evidence_policy"`
	// The probe thresholds, the defaults until a lead sets others.
	ProbeRetestChange float64     `json:"probe_retest_change"`
	ProbePerturbMove  float64     `json:"probe_perturb_move"`
	ProbeMinItems     int         `json:"probe_min_items"`
	ProbeLengthSlope  float64     `json:"probe_length_slope"`
	Progress          apiProgress `json:"progress"`
}

// APIProject returns a project and its progress. Annotators see their own
// row of the per-annotator figures only.
func (s *Handler) APIProject(r *http.Request, u *attune.User) (int, any, error) {
	p, role, err := s.APIProjectAccess(r.Context(), r, u)
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
func (s *Handler) projectBody(ctx context.Context, p *attune.Project, role attune.MemberRole, u *attune.User) (*apiProjectDetail, error) {
	pr, err := s.DB.Progress(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	t, err := s.DB.ProbeThresholds(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	out := &apiProjectDetail{
		ProbeRetestChange: t.RetestChange, ProbePerturbMove: t.PerturbMove, ProbeMinItems: t.MinItems, ProbeLengthSlope: t.LengthSlope,
		apiProjectSummary: apiProjectSummary{p.ID, p.Name, p.RubricRef, string(p.Status), p.Overlap, pr.Items, pr.Complete, string(role)},
		Instructions:      p.Instructions, LeaseSeconds: int(p.Lease.Seconds()), SystemKey: p.SystemKey,
		EvidencePolicy: string(p.Evidence()),
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

// APIImport streams the request body into the project: ?format=jsonl|csv
// (detected when absent), ?update=true to replace changed unlabelled items.
func (s *Handler) APIImport(r *http.Request, u *attune.User) (int, any, error) {
	p, role, err := s.APIProjectAccess(r.Context(), r, u)
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
	limit := s.MaxUpload()
	if r.ContentLength > limit {
		return 0, nil, &kit.TooLarge{What: "file", Limit: limit}
	}
	res, err := importer.Import(r.Context(), s.DB, p, http.MaxBytesReader(nil, r.Body, limit),
		importer.Options{ActorID: &u.ID, Source: "api", Format: format, Update: r.URL.Query().Get("update") == "true"})
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return 0, nil, &kit.TooLarge{What: "file", Limit: limit}
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]int{"read": res.Read, "inserted": res.Inserted, "updated": res.Updated, "unchanged": res.Unchanged}, nil
}
