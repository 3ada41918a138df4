package projects

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/yuin/goldmark"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	flagview "github.com/attune/attune/web/views/flag"
	"github.com/attune/attune/web/views/project"
)

// projectInput is a checked create or edit form.
type projectInput struct {
	name         string
	instructions string
	overlap      int
	lease        time.Duration
	epsilon      float64
	systemKey    string // "" when the form has no such field: the stored or default key
	// evidence is "" when the form has no such field: the stored or
	// default setting (the store reads "" so).
	evidence rubric.EvidencePolicy
	// probe are the probe thresholds, nil when the form has none of their
	// fields: the stored or default ones.
	probe *probe.Thresholds
}

// readProjectForm reads the fields the create and edit forms share and
// checks them, returning what was typed (to show again) and a message per
// bad field. The probe thresholds typed are laid over stored (the
// project's, or the defaults for a new one).
func readProjectForm(r *http.Request, stored probe.Thresholds) (project.Form, projectInput, map[string]string) {
	f := project.Form{
		Name:         strings.TrimSpace(r.PostFormValue("name")),
		RubricID:     strings.TrimSpace(r.PostFormValue("rubric")),
		Overlap:      strings.TrimSpace(r.PostFormValue("overlap")),
		LeaseMinutes: strings.TrimSpace(r.PostFormValue("lease")),
		Annotators:   strings.TrimSpace(r.PostFormValue("annotators")),
		Epsilon:      strings.TrimSpace(r.PostFormValue("epsilon")),
		SystemKey:    strings.TrimSpace(r.PostFormValue("system_key")),
		Evidence:     strings.TrimSpace(r.PostFormValue("evidence_policy")),
		// Browsers send textarea line ends as CRLF; store what people typed.
		Instructions: strings.ReplaceAll(r.PostFormValue("instructions"), "\r\n", "\n"),
	}
	in := projectInput{name: f.Name, instructions: f.Instructions, systemKey: f.SystemKey, evidence: rubric.EvidencePolicy(f.Evidence)}
	unread := map[string]string{}
	// A form without the field (one that predates the setting) keeps the
	// key; one that sends it empty is refused by Validate.
	_, sent := r.PostForm["system_key"]
	checkKey := f.SystemKey
	if !sent {
		checkKey = attune.DefaultSystemKey
	}
	// Likewise a form without the evidence field keeps the setting (the
	// store reads "" so), and one that sends it empty is refused.
	if _, sent := r.PostForm["evidence_policy"]; sent && f.Evidence == "" {
		unread["evidence_policy"] = attune.ProjectFieldMessage("evidence_policy")
	}
	if v, err := strconv.Atoi(f.Overlap); err != nil {
		unread["overlap"] = attune.ProjectFieldMessage("overlap")
	} else {
		in.overlap = v
	}
	if v, err := strconv.Atoi(f.LeaseMinutes); err != nil || v > math.MaxInt32 {
		unread["lease"] = attune.ProjectFieldMessage("lease")
	} else {
		in.lease = time.Duration(v) * time.Minute
	}
	if v, ok, msg := attune.ReadEpsilon(f.Annotators, f.Epsilon); !ok {
		unread["epsilon"] = msg
	} else {
		in.epsilon = v
	}
	p := attune.Project{Name: in.name, Instructions: in.instructions, Overlap: in.overlap, Lease: in.lease, Epsilon: in.epsilon, SystemKey: checkKey,
		EvidencePolicy: in.evidence}
	errs := kit.FieldErrors(p.Validate())
	// A form without the thresholds' fields keeps them; each sent is read.
	typed := map[string]string{}
	for _, field := range probe.ThresholdFields {
		if v, sent := r.PostForm[field]; sent && len(v) > 0 {
			typed[field] = v[0]
		}
	}
	thresholds, unreadThresholds := probe.ReadThresholds(stored, typed)
	f.Probes = thresholdFields(thresholds, typed)
	if len(typed) > 0 {
		in.probe = &thresholds
		maps.Copy(errs, kit.FieldErrors(thresholds.Validate()))
		maps.Copy(errs, unreadThresholds)
	}
	for k, m := range unread {
		errs[k] = m
	}
	return f, in, errs
}

// thresholdNames are the project form's labels and help of the probe
// thresholds.
var thresholdNames = map[string][2]string{
	probe.FieldRetestChange: {"Retest: most items whose answer may change", fmt.Sprintf("A share from 0 up to 1 (default %v): asked the same item several times, the judge is unstable when more of the items change their answer.", probe.DefaultRetestChange)},
	probe.FieldPerturbMove:  {"Rewrite: most items whose answer may move", fmt.Sprintf("A share from 0 up to 1 (default %v): under one neutral rewrite of the dialogue, the judge is unstable when more of the items move.", probe.DefaultPerturbMove)},
	probe.FieldMinItems:     {"Fewest items a probe judges on", fmt.Sprintf("A whole number of at least 2 (default %d): on fewer calibration items a probe says too few items and fails nothing.", probe.DefaultMinItems)},
	probe.FieldLengthSlope:  {"Length: largest difference of slopes", fmt.Sprintf("From 0 to %d per doubling of the reply's length (default %v): the judge is unstable when its slope parts from the people's by more.", probe.MaxLengthSlope, probe.DefaultLengthSlope)},
}

// thresholdFields are the form's threshold fields: what was typed where a
// field was sent, otherwise t's.
func thresholdFields(t probe.Thresholds, typed map[string]string) []project.Threshold {
	out := make([]project.Threshold, 0, len(probe.ThresholdFields))
	for _, field := range probe.ThresholdFields {
		v, ok := typed[field]
		if !ok {
			v = t.Setting(field)
		}
		step := "any"
		if field == probe.FieldMinItems {
			step = "1"
		}
		out = append(out, project.Threshold{Field: field, Label: thresholdNames[field][0], Help: thresholdNames[field][1], Value: v, Step: step})
	}
	return out
}

// annotatorPools are the answers the project form offers to "who are the
// annotators?", each with the ε it sets, then a custom ε.
func annotatorPools() []project.Pool {
	out := make([]project.Pool, 0, len(attune.AnnotatorPools)+1)
	for _, p := range attune.AnnotatorPools {
		out = append(out, project.Pool{Key: p.Key, Label: fmt.Sprintf("%s (ε %s)", p.Label, strconv.FormatFloat(p.Epsilon, 'f', -1, 64))})
	}
	return append(out, project.Pool{Key: attune.AnnotatorsCustom, Label: "custom ε (below)"})
}

// evidenceChoices are the turn evidence settings the project form offers,
// each with what it means for the people labelling.
var evidenceChoices = []project.Evidence{
	{Value: string(rubric.EvidenceOff), Label: "Off", Help: "No turns are marked."},
	{Value: string(rubric.EvidenceOptional), Label: "Optional", Help: "A person may mark the turns where a failing answer fails, on the annotators' page or through the API."},
	{Value: string(rubric.EvidenceRequired), Label: "Required", Help: "Every failing answer names at least one turn. The annotators' page asks for the turns with each failing answer, and refuses it without them."},
}

// evidenceLabel names a project's turn evidence setting as the form does.
func evidenceLabel(p *attune.Project) string {
	for _, c := range evidenceChoices {
		if c.Value == string(p.Evidence()) {
			return c.Label
		}
	}
	return string(p.Evidence())
}

// NewProjectPage shows the form that makes a project, with the defaults filled in.
func (s *Handler) NewProjectPage(w http.ResponseWriter, r *http.Request) error {
	return s.renderNewProject(w, r, http.StatusOK, project.Form{
		Overlap: strconv.Itoa(attune.DefaultOverlap), LeaseMinutes: strconv.Itoa(int(attune.DefaultLease / time.Minute)),
		Annotators: attune.PoolOfEpsilon(attune.DefaultEpsilon).Key, SystemKey: attune.DefaultSystemKey,
		Evidence: string(rubric.EvidenceOptional), Probes: thresholdFields(probe.DefaultThresholds(), nil),
	}, nil)
}

func (s *Handler) renderNewProject(w http.ResponseWriter, r *http.Request, status int, form project.Form, errs map[string]string) error {
	rubrics, err := s.DB.ListRubrics(r.Context())
	if err != nil {
		return err
	}
	form.Pools, form.Evidences = annotatorPools(), evidenceChoices
	page := project.NewPage{Chrome: s.Chrome(r, "New project", "home"), Form: form, Errors: errs}
	for _, rv := range rubrics {
		page.Rubrics = append(page.Rubrics, project.RubricOption{ID: rv.ID, Label: rv.Ref.String() + " — " + rv.Title})
	}
	s.Render(w, r, status, project.New(page))
	return nil
}

// CreateProject makes a project from the form, led by its maker, or shows
// the form again with what was wrong.
func (s *Handler) CreateProject(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	form, in, errs := readProjectForm(r, probe.DefaultThresholds())
	rubricID, err := strconv.ParseInt(form.RubricID, 10, 64)
	if err != nil {
		errs["rubric"] = "Choose the rubric version the project labels with."
	} else if ok, err := s.rubricExists(r, rubricID); err != nil {
		return err
	} else if !ok {
		errs["rubric"] = "That rubric version no longer exists; choose another."
	}
	if len(errs) > 0 {
		return s.renderNewProject(w, r, http.StatusUnprocessableEntity, form, errs)
	}
	actor := kit.UserFrom(ctx).ID
	p, err := s.DB.CreateProject(ctx, &actor, store.NewProject{
		Name: in.name, Instructions: in.instructions, RubricVersionID: rubricID, Overlap: in.overlap, Lease: in.lease, Epsilon: in.epsilon,
		SystemKey: in.systemKey, EvidencePolicy: in.evidence, ProbeThresholds: in.probe,
	})
	if errors.Is(err, attune.ErrConflict) {
		return s.renderNewProject(w, r, http.StatusConflict, form, map[string]string{"name": kit.Capitalize(attune.PublicMessage(err)) + "; choose another name."})
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, "Created "+p.Name+". Add annotators and import a dataset to start labelling.")
	http.Redirect(w, r, kit.ProjectPath(p.ID), http.StatusSeeOther)
	return nil
}

func (s *Handler) rubricExists(r *http.Request, id int64) (bool, error) {
	rubrics, err := s.DB.ListRubrics(r.Context())
	if err != nil {
		return false, err
	}
	for _, rv := range rubrics {
		if rv.ID == id {
			return true, nil
		}
	}
	return false, nil
}

// ViewProject serves the project page, as the viewer's role in the project
// lets them see it.
func (s *Handler) ViewProject(w http.ResponseWriter, r *http.Request) error {
	p, role, err := s.ProjectAccess(r, false)
	if err != nil {
		return err
	}
	page, err := s.ProjectPage(r, p, role)
	if err != nil {
		return err
	}
	s.Render(w, r, http.StatusOK, project.View(page))
	return nil
}

// ProjectPage builds the project page for the viewer's role. Handlers that
// re-render it with a form's errors fill those in afterwards.
func (s *Handler) ProjectPage(r *http.Request, p *attune.Project, role attune.MemberRole) (project.Page, error) {
	ctx := r.Context()
	viewer := kit.UserFrom(ctx)
	page := project.Page{
		Chrome:       s.Chrome(r, p.Name, "home"),
		ID:           p.ID,
		Name:         p.Name,
		Rubric:       p.RubricRef,
		Status:       string(p.Status),
		Overlap:      p.Overlap,
		LeaseMinutes: int(p.Lease / time.Minute),
		// A saved ε outside the usual range is used as the lead set it,
		// and marked as the report marks one asked for with
		// alt_unusual_epsilon=1.
		Epsilon:    kit.AltEpsilonLabel(p.Epsilon, !agreement.AltEpsilonUsual(p.Epsilon)),
		SystemKey:  p.SystemKey,
		Evidence:   evidenceLabel(p),
		IsLead:     role == attune.MemberLead,
		MemberForm: project.MemberForm{Role: string(attune.MemberAnnotator)},
	}
	html, err := renderMarkdown(p.Instructions)
	if err != nil {
		return page, err
	}
	page.Instructions = html
	pr, err := s.DB.Progress(ctx, p.ID)
	if err != nil {
		return page, err
	}
	if !page.IsLead {
		// Blind labelling: an annotator sees only their own numbers.
		for _, a := range pr.Annotators {
			if a.UserID == viewer.ID {
				page.Own = project.Own{Submitted: a.Submitted, Skipped: a.Skipped, LastHour: a.LastHour}
			}
		}
		return page, nil
	}
	page.Progress = project.Progress{
		Items: pr.Items, Complete: pr.Complete, Active: pr.Active, LastHour: pr.LastHour, ByLabels: pr.ByLabels, Pulled: pr.Pulled,
	}
	fc, err := s.DB.CountFlags(ctx, p.ID)
	if err != nil {
		return page, err
	}
	page.Flags = &flagview.ProjectSummary{Flags: templ.SafeURL(kit.FlagsPath(p.ID)), Counts: kit.FlagCounts(fc)}
	for _, a := range pr.Annotators {
		page.Progress.Annotators = append(page.Progress.Annotators, project.Annotator{
			Name: displayName(a.Name, a.Email), Email: a.Email,
			Submitted: a.Submitted, Skipped: a.Skipped, LastHour: a.LastHour, Median: formatPace(a.Submitted, a.MedianActive),
		})
	}
	if viewer.Role.AtLeast(attune.RoleLead) {
		// Judges are for leads and admins (JudgesSection).
		if page.Judges, err = s.JudgesSection(ctx, p); err != nil {
			return page, err
		}
	}
	members, err := s.DB.ListMembers(ctx, p.ID)
	if err != nil {
		return page, err
	}
	for _, m := range members {
		page.Members = append(page.Members, project.Member{
			UserID: m.UserID, Email: m.Email, Name: m.Name, Role: string(m.Role),
			Added: m.AddedAt.UTC().Format("2006-01-02"), IsViewer: m.UserID == viewer.ID,
			Paused: m.Paused, PausedWhy: m.PausedWhy,
		})
	}
	page.Alerts, err = s.calibrationAlerts(ctx, p, members)
	return page, err
}

// calibrationAlerts lists the project's annotators whose calibration items
// show drift, or whose accuracy against gold sits below the pass mark.
func (s *Handler) calibrationAlerts(ctx context.Context, p *attune.Project, members []attune.Member) ([]project.Alert, error) {
	history, err := s.DB.CalibrationHistory(ctx, p.ID)
	if err != nil || len(history) == 0 {
		return nil, err
	}
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return nil, err
	}
	pol, err := s.DB.CalibrationPolicy(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	var alerts []project.Alert
	for _, h := range history {
		i := slices.IndexFunc(members, func(m attune.Member) bool { return m.UserID == h.UserID && m.Role == attune.MemberAnnotator })
		if h.UserID == 0 || i < 0 {
			continue
		}
		if what := calibration.Summarize(def, h.Records).Alert(pol.PassPercent); what != "" {
			m := members[i]
			alerts = append(alerts, project.Alert{UserID: m.UserID, Name: displayName(m.Name, m.Email), What: what, Paused: m.Paused})
		}
	}
	return alerts, nil
}

// memberInPath is the project a lead acts on and the user id in the path
// ({userID}); whether that user is a member is for the caller to find.
func (s *Handler) memberInPath(r *http.Request) (*attune.Project, int64, error) {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return nil, 0, err
	}
	uid, err := kit.PathInt(r, "userID")
	if err != nil {
		return nil, 0, err
	}
	return p, uid, nil
}

// PauseQueue pauses (pause=1, with the reason the person will read) or
// resumes (pause=0) one annotator's queue.
func (s *Handler) PauseQueue(w http.ResponseWriter, r *http.Request) error {
	p, uid, err := s.memberInPath(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	pause := r.PostFormValue("pause") == "1"
	why := strings.TrimSpace(r.PostFormValue("why"))
	viewer := kit.UserFrom(ctx)
	back := kit.ProjectPath(p.ID) + "#members"
	err = s.DB.SetQueuePaused(ctx, &viewer.ID, p.ID, uid, pause, why)
	var invalid *attune.ValidationError
	if errors.As(err, &invalid) {
		s.FlashError(ctx, "The queue was not paused: "+invalid.Fields["why"])
		http.Redirect(w, r, back, http.StatusSeeOther)
		return nil
	}
	if err != nil {
		return err
	}
	msg := "Their queue is resumed."
	if pause {
		msg = "Their queue is paused: they are handed nothing new until you resume it."
	}
	s.Flash(ctx, msg)
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

// markdown renders project instructions. Its defaults are what make the
// output safe to write unescaped: raw HTML in the source is left out, and
// links to javascript:, vbscript:, file: and data: URLs lose their target.
// A goldmark.Markdown is safe for concurrent use.
var markdown = goldmark.New()

// renderMarkdown turns a lead's Markdown into HTML fit for the page.
func renderMarkdown(src string) (project.HTML, error) {
	if strings.TrimSpace(src) == "" {
		return "", nil
	}
	var b bytes.Buffer
	if err := markdown.Convert([]byte(src), &b); err != nil {
		return "", fmt.Errorf("render instructions: %w", err)
	}
	return project.HTML(b.String()), nil
}

// formatPace shows a median time per item, or a dash before the first.
func formatPace(submitted int, d time.Duration) string {
	if submitted == 0 {
		return "—"
	}
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%d s", int(d/time.Second))
	}
	return fmt.Sprintf("%d min %02d s", int(d/time.Minute), int(d%time.Minute/time.Second))
}

func displayName(name, email string) string {
	if strings.TrimSpace(name) != "" {
		return name
	}
	return email
}

// EditProjectPage shows the form that changes a project's settings.
func (s *Handler) EditProjectPage(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	t, err := s.DB.ProbeThresholds(r.Context(), p.ID)
	if err != nil {
		return err
	}
	form := project.Form{
		Name: p.Name, Instructions: p.Instructions,
		Overlap: strconv.Itoa(p.Overlap), LeaseMinutes: strconv.Itoa(int(p.Lease / time.Minute)),
		Annotators: attune.PoolOfEpsilon(p.Epsilon).Key, Epsilon: strconv.FormatFloat(p.Epsilon, 'f', -1, 64),
		SystemKey: p.SystemKey, Evidence: string(p.Evidence()), Probes: thresholdFields(t, nil),
	}
	s.renderEditProject(w, r, http.StatusOK, p, form, nil)
	return nil
}

func (s *Handler) renderEditProject(w http.ResponseWriter, r *http.Request, status int, p *attune.Project, form project.Form, errs map[string]string) {
	form.Pools, form.Evidences = annotatorPools(), evidenceChoices
	s.Render(w, r, status, project.Edit(project.EditPage{
		Chrome: s.Chrome(r, "Edit "+p.Name, "home"),
		ID:     p.ID, Name: p.Name, Rubric: p.RubricRef, Form: form, Errors: errs,
	}))
}

// UpdateProject saves the edit form, or shows it again with what was wrong.
func (s *Handler) UpdateProject(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	stored, err := s.DB.ProbeThresholds(r.Context(), p.ID)
	if err != nil {
		return err
	}
	form, in, errs := readProjectForm(r, stored)
	if len(errs) > 0 {
		s.renderEditProject(w, r, http.StatusUnprocessableEntity, p, form, errs)
		return nil
	}
	ctx := r.Context()
	err = s.DB.UpdateProject(ctx, kit.UserFrom(ctx).ID, p.ID, store.ProjectChanges{
		Name: in.name, Instructions: in.instructions, Overlap: in.overlap, Lease: in.lease, Epsilon: in.epsilon,
		SystemKey: in.systemKey, EvidencePolicy: in.evidence, ProbeThresholds: in.probe,
	})
	if errors.Is(err, attune.ErrConflict) {
		s.renderEditProject(w, r, http.StatusConflict, p, form, map[string]string{"name": kit.Capitalize(attune.PublicMessage(err)) + "; choose another name."})
		return nil
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, "Saved the project settings.")
	http.Redirect(w, r, kit.ProjectPath(p.ID), http.StatusSeeOther)
	return nil
}

// AddMember adds an account, by email, to the project as an annotator or a
// lead, or shows the project page again with what was wrong.
func (s *Handler) AddMember(w http.ResponseWriter, r *http.Request) error {
	p, role, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	form := project.MemberForm{Email: strings.TrimSpace(r.PostFormValue("email")), Role: r.PostFormValue("role")}
	fail := func(status int, errs map[string]string) error {
		page, err := s.ProjectPage(r, p, role)
		if err != nil {
			return err
		}
		page.MemberForm, page.MemberErrors = form, errs
		s.Render(w, r, status, project.View(page))
		return nil
	}
	errs := map[string]string{}
	mrole := attune.MemberRole(form.Role)
	if mrole != attune.MemberAnnotator && mrole != attune.MemberLead {
		errs["role"] = "Choose annotator or lead."
	}
	email, err := attune.NormalizeEmail(form.Email)
	if err != nil {
		errs["email"] = "Enter the email address of the person's account."
	}
	if len(errs) > 0 {
		return fail(http.StatusUnprocessableEntity, errs)
	}
	u, err := s.DB.FindUserByEmail(ctx, email)
	if kit.IsNotFound(err) {
		return fail(http.StatusUnprocessableEntity, map[string]string{
			"email": "No account has the email " + email + ". Ask an admin to create it, then add it here.",
		})
	}
	if err != nil {
		return err
	}
	actor := kit.UserFrom(ctx).ID
	err = s.DB.AddMember(ctx, &actor, p.ID, u.ID, mrole)
	if errors.Is(err, attune.ErrConflict) {
		// The message starts with the email address, which keeps its case.
		return fail(http.StatusConflict, map[string]string{"email": attune.PublicMessage(err) + "."})
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, fmt.Sprintf("%s is now %s on this project.", email, withArticle(mrole)))
	http.Redirect(w, r, kit.ProjectPath(p.ID)+"#members", http.StatusSeeOther)
	return nil
}

func withArticle(r attune.MemberRole) string {
	if r == attune.MemberAnnotator {
		return "an annotator"
	}
	return "a lead"
}

// RemoveMember takes a person out of the project; their labels stay.
func (s *Handler) RemoveMember(w http.ResponseWriter, r *http.Request) error {
	p, uid, err := s.memberInPath(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	members, err := s.DB.ListMembers(ctx, p.ID)
	if err != nil {
		return err
	}
	var gone *attune.Member
	for i, m := range members {
		if m.UserID == uid {
			gone = &members[i]
		}
	}
	if gone == nil {
		return attune.NotFound("member")
	}
	back := kit.ProjectPath(p.ID) + "#members"
	viewer := kit.UserFrom(ctx)
	// The store refuses to remove the only lead (a project without one
	// could be managed only by admins), atomically with the removal.
	err = s.DB.RemoveMember(ctx, &viewer.ID, p.ID, uid)
	if errors.Is(err, attune.ErrConflict) {
		s.FlashError(ctx, gone.Email+" is the only lead of this project. Add another lead before removing them.")
		http.Redirect(w, r, back, http.StatusSeeOther)
		return nil
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, "Removed "+gone.Email+" from the project. Their labels stay.")
	if uid == viewer.ID && viewer.Role != attune.RoleAdmin {
		// They left the project and can no longer open it.
		back = "/"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

// SetProjectStatus makes the project active, paused or archived.
func (s *Handler) SetProjectStatus(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	status := attune.ProjectStatus(r.PostFormValue("status"))
	var msg string
	switch status {
	case attune.ProjectActive:
		msg = "The project is active: annotators get items again."
	case attune.ProjectPaused:
		msg = "The project is paused: annotators get no new items until you resume it."
	case attune.ProjectArchived:
		msg = "The project is archived: annotators get no new items. Reopen it to label again."
	default:
		return attune.Invalid("status", "choose active, paused or archived")
	}
	if err := s.DB.SetProjectStatus(ctx, kit.UserFrom(ctx).ID, p.ID, status); err != nil {
		return err
	}
	s.Flash(ctx, msg)
	http.Redirect(w, r, kit.ProjectPath(p.ID), http.StatusSeeOther)
	return nil
}

// ImportItems streams an uploaded dataset into the project. The body is
// read part by part and the file part goes straight to the importer, so
// memory stays bounded whatever the file's size. Fields must therefore come
// before the file: the form puts the update box first, and any part after
// the file is ignored (a browser sends parts in form order).
func (s *Handler) ImportItems(w http.ResponseWriter, r *http.Request) error {
	p, role, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, s.MaxUpload())
	var update bool
	// refuse re-renders the project page saying why nothing was imported:
	// the file's line errors when err carries them, else message.
	refuse := func(status int, source string, err error, message string) error {
		page, verr := s.ProjectPage(r, p, role)
		if verr != nil {
			return verr
		}
		ip := &project.ImportProblems{Source: source, Message: message}
		var le *attune.LineErrors
		if errors.As(err, &le) {
			for _, l := range le.Errors {
				ip.Lines = append(ip.Lines, project.ImportLine{Line: l.Line, Field: l.Field, Message: l.Message})
			}
			ip.More = le.More
		} else if err != nil {
			ip.Message = kit.PublicText(err)
		}
		page.ImportUpdate, page.ImportProblems = update, ip
		s.Render(w, r, status, project.View(page))
		return nil
	}
	fields := map[string]string{"update": ""}
	var res store.ImportResult
	var source string
	err = kit.ReadUpload(r, s.MaxUpload(), fields, func(name string, file io.Reader) error {
		source, update = name, kit.Checked(fields["update"])
		var err error
		res, err = importer.Import(ctx, s.DB, p, file, importer.Options{ActorID: &kit.UserFrom(ctx).ID, Source: name, Update: update})
		return err
	})
	update = kit.Checked(fields["update"]) // shown again on a refusal
	var refused *kit.UploadRefused
	if errors.As(err, &refused) {
		return refuse(refused.Status, refused.Source, refused.Err, refused.Message)
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, fmt.Sprintf("Imported %d new %s (%d updated, %d unchanged) from %s.",
		res.Inserted, kit.Plural(res.Inserted, "item", "items"), res.Updated, res.Unchanged, source))
	http.Redirect(w, r, kit.ProjectPath(p.ID), http.StatusSeeOther)
	return nil
}

// maxSensitiveList bounds the ids one mark-sensitive form may hold.
const maxSensitiveList = 10000

// MarkSensitive sets or clears the lead's mark that items mention suicide
// or self-harm, by the dataset's ids, one a line. Unknown ids are named in
// the message; the known ones are marked all the same.
func (s *Handler) MarkSensitive(w http.ResponseWriter, r *http.Request) error {
	p, role, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	form := project.SensitiveForm{IDs: strings.ReplaceAll(r.PostFormValue("ids"), "\r\n", "\n"), Clear: r.PostFormValue("clear") != ""}
	var ids []string
	for line := range strings.SplitSeq(form.IDs, "\n") {
		if id := strings.TrimSpace(line); id != "" {
			ids = append(ids, id)
		}
	}
	refuse := func(msg string) error {
		page, err := s.ProjectPage(r, p, role)
		if err != nil {
			return err
		}
		page.SensitiveForm, page.SensitiveError = form, msg
		s.Render(w, r, http.StatusUnprocessableEntity, project.View(page))
		return nil
	}
	switch {
	case len(ids) == 0:
		return refuse("Enter the ids of the items, one a line.")
	case len(ids) > maxSensitiveList:
		return refuse(fmt.Sprintf("Mark at most %d items at once (this list has %d).", maxSensitiveList, len(ids)))
	}
	changed, unknown, err := s.DB.MarkSensitive(ctx, kit.UserFrom(ctx).ID, p.ID, ids, !form.Clear)
	if err != nil {
		return err
	}
	verb := "Marked %d %s as sensitive."
	if form.Clear {
		verb = "Cleared the sensitive mark of %d %s."
	}
	msg := fmt.Sprintf(verb, changed, kit.Plural(changed, "item", "items"))
	if len(unknown) > 0 {
		shown := unknown[:min(len(unknown), 10)]
		msg += fmt.Sprintf(" No item has the id %s", strings.Join(shown, ", "))
		if len(unknown) > len(shown) {
			msg += fmt.Sprintf(" (and %d more)", len(unknown)-len(shown))
		}
		msg += "."
	}
	s.Flash(ctx, msg)
	http.Redirect(w, r, kit.ProjectPath(p.ID)+"#sensitive", http.StatusSeeOther)
	return nil
}
