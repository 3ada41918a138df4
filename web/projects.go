package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	"github.com/attune/attune/internal/store"
	flagview "github.com/attune/attune/web/views/flag"
	"github.com/attune/attune/web/views/project"
)

// Limits of the project pages; the settings' own are attune's (see
// attune.Project.Validate).
const (
	// maxImportBytes bounds an upload unless Options.MaxUpload says
	// otherwise. The file is streamed into the
	// import, so this bounds the time a request may take, not memory.
	maxImportBytes = 256 << 20
)

// projectAccess loads the project named in the path and the viewer's role
// in it. With manage set, only the project's leads (and admins) pass.
func (s *Server) projectAccess(r *http.Request, manage bool) (*attune.Project, attune.MemberRole, error) {
	ctx := r.Context()
	id, err := pathInt(r, "id")
	if err != nil {
		return nil, "", err
	}
	role, err := s.db.ProjectRole(ctx, id, userFrom(ctx))
	if err != nil {
		return nil, "", err
	}
	if manage && role != attune.MemberLead {
		return nil, role, attune.Forbidden("Only a lead of this project can change it.")
	}
	p, err := s.db.FindProjectByID(ctx, id)
	if err != nil {
		return nil, "", err
	}
	return p, role, nil
}

func projectPath(id int64) string { return fmt.Sprintf("/projects/%d", id) }

// projectInput is a checked create or edit form.
type projectInput struct {
	name         string
	instructions string
	overlap      int
	lease        time.Duration
	epsilon      float64
}

// readProjectForm reads the fields the create and edit forms share and
// checks them, returning what was typed (to show again) and a message per
// bad field.
func readProjectForm(r *http.Request) (project.Form, projectInput, map[string]string) {
	f := project.Form{
		Name:         strings.TrimSpace(r.PostFormValue("name")),
		RubricID:     strings.TrimSpace(r.PostFormValue("rubric")),
		Overlap:      strings.TrimSpace(r.PostFormValue("overlap")),
		LeaseMinutes: strings.TrimSpace(r.PostFormValue("lease")),
		Annotators:   strings.TrimSpace(r.PostFormValue("annotators")),
		Epsilon:      strings.TrimSpace(r.PostFormValue("epsilon")),
		// Browsers send textarea line ends as CRLF; store what people typed.
		Instructions: strings.ReplaceAll(r.PostFormValue("instructions"), "\r\n", "\n"),
	}
	in := projectInput{name: f.Name, instructions: f.Instructions}
	unread := map[string]string{}
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
	p := attune.Project{Name: in.name, Instructions: in.instructions, Overlap: in.overlap, Lease: in.lease, Epsilon: in.epsilon}
	errs := fieldErrors(p.Validate())
	for k, m := range unread {
		errs[k] = m
	}
	return f, in, errs
}

// epsilonLabel says an ε and who the annotators are: "0.2 (experts)".
func epsilonLabel(e float64) string {
	return fmt.Sprintf("%s (%s)", strconv.FormatFloat(e, 'f', -1, 64), attune.PoolOfEpsilon(e).Label)
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

func (s *Server) newProjectPage(w http.ResponseWriter, r *http.Request) error {
	return s.renderNewProject(w, r, http.StatusOK, project.Form{
		Overlap: strconv.Itoa(attune.DefaultOverlap), LeaseMinutes: strconv.Itoa(int(attune.DefaultLease / time.Minute)),
		Annotators: attune.PoolOfEpsilon(attune.DefaultEpsilon).Key,
	}, nil)
}

func (s *Server) renderNewProject(w http.ResponseWriter, r *http.Request, status int, form project.Form, errs map[string]string) error {
	rubrics, err := s.db.ListRubrics(r.Context())
	if err != nil {
		return err
	}
	form.Pools = annotatorPools()
	page := project.NewPage{Chrome: s.chrome(r, "New project", "home"), Form: form, Errors: errs}
	for _, rv := range rubrics {
		page.Rubrics = append(page.Rubrics, project.RubricOption{ID: rv.ID, Label: rv.Ref.String() + " — " + rv.Title})
	}
	s.render(w, r, status, project.New(page))
	return nil
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	form, in, errs := readProjectForm(r)
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
	actor := userFrom(ctx).ID
	p, err := s.db.CreateProject(ctx, &actor, store.NewProject{
		Name: in.name, Instructions: in.instructions, RubricVersionID: rubricID, Overlap: in.overlap, Lease: in.lease, Epsilon: in.epsilon,
	})
	if errors.Is(err, attune.ErrConflict) {
		return s.renderNewProject(w, r, http.StatusConflict, form, map[string]string{"name": capitalize(attune.PublicMessage(err)) + "; choose another name."})
	}
	if err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionFlash, "Created "+p.Name+". Add annotators and import a dataset to start labelling.")
	http.Redirect(w, r, projectPath(p.ID), http.StatusSeeOther)
	return nil
}

func (s *Server) rubricExists(r *http.Request, id int64) (bool, error) {
	rubrics, err := s.db.ListRubrics(r.Context())
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

func (s *Server) projectPage(w http.ResponseWriter, r *http.Request) error {
	p, role, err := s.projectAccess(r, false)
	if err != nil {
		return err
	}
	page, err := s.projectView(r, p, role)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, project.View(page))
	return nil
}

// projectView builds the project page for the viewer's role. Handlers that
// re-render it with a form's errors fill those in afterwards.
func (s *Server) projectView(r *http.Request, p *attune.Project, role attune.MemberRole) (project.Page, error) {
	ctx := r.Context()
	viewer := userFrom(ctx)
	page := project.Page{
		Chrome:       s.chrome(r, p.Name, "home"),
		ID:           p.ID,
		Name:         p.Name,
		Rubric:       p.RubricRef,
		Status:       string(p.Status),
		Overlap:      p.Overlap,
		LeaseMinutes: int(p.Lease / time.Minute),
		// A saved ε outside the usual range is used as the lead set it,
		// and marked as the report marks one asked for with
		// alt_unusual_epsilon=1.
		Epsilon:    altEpsilonLabel(p.Epsilon, !agreement.AltEpsilonUsual(p.Epsilon)),
		IsLead:     role == attune.MemberLead,
		MemberForm: project.MemberForm{Role: string(attune.MemberAnnotator)},
	}
	html, err := renderMarkdown(p.Instructions)
	if err != nil {
		return page, err
	}
	page.Instructions = html
	pr, err := s.db.Progress(ctx, p.ID)
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
	fc, err := s.db.CountFlags(ctx, p.ID)
	if err != nil {
		return page, err
	}
	page.Flags = &flagview.ProjectSummary{Flags: templ.SafeURL(flagsPath(p.ID)), Counts: flagCountsView(fc)}
	for _, a := range pr.Annotators {
		page.Progress.Annotators = append(page.Progress.Annotators, project.Annotator{
			Name: displayName(a.Name, a.Email), Email: a.Email,
			Submitted: a.Submitted, Skipped: a.Skipped, LastHour: a.LastHour, Median: formatPace(a.Submitted, a.MedianActive),
		})
	}
	if viewer.Role.AtLeast(attune.RoleLead) {
		// Judges are for leads and admins (web/judges_runs.go).
		if page.Judges, err = s.judgesSection(ctx, p); err != nil {
			return page, err
		}
	}
	members, err := s.db.ListMembers(ctx, p.ID)
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
func (s *Server) calibrationAlerts(ctx context.Context, p *attune.Project, members []attune.Member) ([]project.Alert, error) {
	history, err := s.db.CalibrationHistory(ctx, p.ID)
	if err != nil || len(history) == 0 {
		return nil, err
	}
	def, err := s.db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return nil, err
	}
	pol, err := s.db.CalibrationPolicy(ctx, p.ID)
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
func (s *Server) memberInPath(r *http.Request) (*attune.Project, int64, error) {
	p, _, err := s.projectAccess(r, true)
	if err != nil {
		return nil, 0, err
	}
	uid, err := pathInt(r, "userID")
	if err != nil {
		return nil, 0, err
	}
	return p, uid, nil
}

// pauseQueue pauses (pause=1, with the reason the person will read) or
// resumes (pause=0) one annotator's queue.
func (s *Server) pauseQueue(w http.ResponseWriter, r *http.Request) error {
	p, uid, err := s.memberInPath(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	pause := r.PostFormValue("pause") == "1"
	why := strings.TrimSpace(r.PostFormValue("why"))
	viewer := userFrom(ctx)
	back := projectPath(p.ID) + "#members"
	err = s.db.SetQueuePaused(ctx, &viewer.ID, p.ID, uid, pause, why)
	var invalid *attune.ValidationError
	if errors.As(err, &invalid) {
		s.sessions.Put(ctx, sessionFlashError, "The queue was not paused: "+invalid.Fields["why"])
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
	s.sessions.Put(ctx, sessionFlash, msg)
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

// capitalize starts a store message with a capital, as a sentence on the page.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (s *Server) editProjectPage(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.projectAccess(r, true)
	if err != nil {
		return err
	}
	form := project.Form{
		Name: p.Name, Instructions: p.Instructions,
		Overlap: strconv.Itoa(p.Overlap), LeaseMinutes: strconv.Itoa(int(p.Lease / time.Minute)),
		Annotators: attune.PoolOfEpsilon(p.Epsilon).Key, Epsilon: strconv.FormatFloat(p.Epsilon, 'f', -1, 64),
	}
	s.renderEditProject(w, r, http.StatusOK, p, form, nil)
	return nil
}

func (s *Server) renderEditProject(w http.ResponseWriter, r *http.Request, status int, p *attune.Project, form project.Form, errs map[string]string) {
	form.Pools = annotatorPools()
	s.render(w, r, status, project.Edit(project.EditPage{
		Chrome: s.chrome(r, "Edit "+p.Name, "home"),
		ID:     p.ID, Name: p.Name, Rubric: p.RubricRef, Form: form, Errors: errs,
	}))
}

func (s *Server) updateProject(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.projectAccess(r, true)
	if err != nil {
		return err
	}
	form, in, errs := readProjectForm(r)
	if len(errs) > 0 {
		s.renderEditProject(w, r, http.StatusUnprocessableEntity, p, form, errs)
		return nil
	}
	ctx := r.Context()
	err = s.db.UpdateProject(ctx, userFrom(ctx).ID, p.ID, store.ProjectChanges{
		Name: in.name, Instructions: in.instructions, Overlap: in.overlap, Lease: in.lease, Epsilon: in.epsilon,
	})
	if errors.Is(err, attune.ErrConflict) {
		s.renderEditProject(w, r, http.StatusConflict, p, form, map[string]string{"name": capitalize(attune.PublicMessage(err)) + "; choose another name."})
		return nil
	}
	if err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionFlash, "Saved the project settings.")
	http.Redirect(w, r, projectPath(p.ID), http.StatusSeeOther)
	return nil
}

func (s *Server) addMember(w http.ResponseWriter, r *http.Request) error {
	p, role, err := s.projectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	form := project.MemberForm{Email: strings.TrimSpace(r.PostFormValue("email")), Role: r.PostFormValue("role")}
	fail := func(status int, errs map[string]string) error {
		page, err := s.projectView(r, p, role)
		if err != nil {
			return err
		}
		page.MemberForm, page.MemberErrors = form, errs
		s.render(w, r, status, project.View(page))
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
	u, err := s.db.FindUserByEmail(ctx, email)
	if isNotFound(err) {
		return fail(http.StatusUnprocessableEntity, map[string]string{
			"email": "No account has the email " + email + ". Ask an admin to create it, then add it here.",
		})
	}
	if err != nil {
		return err
	}
	actor := userFrom(ctx).ID
	err = s.db.AddMember(ctx, &actor, p.ID, u.ID, mrole)
	if errors.Is(err, attune.ErrConflict) {
		// The message starts with the email address, which keeps its case.
		return fail(http.StatusConflict, map[string]string{"email": attune.PublicMessage(err) + "."})
	}
	if err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionFlash, fmt.Sprintf("%s is now %s on this project.", email, withArticle(mrole)))
	http.Redirect(w, r, projectPath(p.ID)+"#members", http.StatusSeeOther)
	return nil
}

func withArticle(r attune.MemberRole) string {
	if r == attune.MemberAnnotator {
		return "an annotator"
	}
	return "a lead"
}

func (s *Server) removeMember(w http.ResponseWriter, r *http.Request) error {
	p, uid, err := s.memberInPath(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	members, err := s.db.ListMembers(ctx, p.ID)
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
	back := projectPath(p.ID) + "#members"
	viewer := userFrom(ctx)
	// The store refuses to remove the only lead (a project without one
	// could be managed only by admins), atomically with the removal.
	err = s.db.RemoveMember(ctx, &viewer.ID, p.ID, uid)
	if errors.Is(err, attune.ErrConflict) {
		s.sessions.Put(ctx, sessionFlashError, gone.Email+" is the only lead of this project. Add another lead before removing them.")
		http.Redirect(w, r, back, http.StatusSeeOther)
		return nil
	}
	if err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionFlash, "Removed "+gone.Email+" from the project. Their labels stay.")
	if uid == viewer.ID && viewer.Role != attune.RoleAdmin {
		// They left the project and can no longer open it.
		back = "/"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

func (s *Server) setProjectStatus(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.projectAccess(r, true)
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
	if err := s.db.SetProjectStatus(ctx, userFrom(ctx).ID, p.ID, status); err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionFlash, msg)
	http.Redirect(w, r, projectPath(p.ID), http.StatusSeeOther)
	return nil
}

// importItems streams an uploaded dataset into the project. The body is
// read part by part and the file part goes straight to the importer, so
// memory stays bounded whatever the file's size. Fields must therefore come
// before the file: the form puts the update box first, and any part after
// the file is ignored (a browser sends parts in form order).
// toImportForm answers a GET of an import's address (where a refused
// import was shown) with a redirect to the page holding its form, at
// where (a fragment, or a path under the project and a fragment), once
// the viewer is found to lead the project.
func (s *Server) toImportForm(where string) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, _, err := s.projectAccess(r, true)
		if err != nil {
			return err
		}
		http.Redirect(w, r, projectPath(p.ID)+where, http.StatusSeeOther)
		return nil
	}
}

func (s *Server) importItems(w http.ResponseWriter, r *http.Request) error {
	p, role, err := s.projectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, s.maxUpload())
	var update bool
	// refuse re-renders the project page saying why nothing was imported:
	// the file's line errors when err carries them, else message.
	refuse := func(status int, source string, err error, message string) error {
		page, verr := s.projectView(r, p, role)
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
			ip.Message = publicText(err)
		}
		page.ImportUpdate, page.ImportProblems = update, ip
		s.render(w, r, status, project.View(page))
		return nil
	}
	fields := map[string]string{"update": ""}
	var res store.ImportResult
	var source string
	err = readUpload(r, s.maxUpload(), fields, func(name string, file io.Reader) error {
		source, update = name, checked(fields["update"])
		var err error
		res, err = importer.Import(ctx, s.db, p, file, importer.Options{ActorID: &userFrom(ctx).ID, Source: name, Update: update})
		return err
	})
	update = checked(fields["update"]) // shown again on a refusal
	var refused *uploadRefused
	if errors.As(err, &refused) {
		return refuse(refused.status, refused.source, refused.err, refused.message)
	}
	if err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionFlash, fmt.Sprintf("Imported %d new %s (%d updated, %d unchanged) from %s.",
		res.Inserted, plural(res.Inserted, "item", "items"), res.Updated, res.Unchanged, source))
	http.Redirect(w, r, projectPath(p.ID), http.StatusSeeOther)
	return nil
}

// publicText is the message of err fit to show, as a sentence: a
// validation error's field messages without the field names.
func publicText(err error) string {
	var v *attune.ValidationError
	if errors.As(err, &v) {
		msgs := make([]string, 0, len(v.Fields))
		for _, m := range v.Fields {
			msgs = append(msgs, capitalize(m))
		}
		slices.Sort(msgs)
		return strings.Join(msgs, " ")
	}
	return capitalize(attune.PublicMessage(err))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// maxSensitiveList bounds the ids one mark-sensitive form may hold.
const maxSensitiveList = 10000

// markSensitive sets or clears the lead's mark that items mention suicide
// or self-harm, by the dataset's ids, one a line. Unknown ids are named in
// the message; the known ones are marked all the same.
func (s *Server) markSensitive(w http.ResponseWriter, r *http.Request) error {
	p, role, err := s.projectAccess(r, true)
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
		page, err := s.projectView(r, p, role)
		if err != nil {
			return err
		}
		page.SensitiveForm, page.SensitiveError = form, msg
		s.render(w, r, http.StatusUnprocessableEntity, project.View(page))
		return nil
	}
	switch {
	case len(ids) == 0:
		return refuse("Enter the ids of the items, one a line.")
	case len(ids) > maxSensitiveList:
		return refuse(fmt.Sprintf("Mark at most %d items at once (this list has %d).", maxSensitiveList, len(ids)))
	}
	changed, unknown, err := s.db.MarkSensitive(ctx, userFrom(ctx).ID, p.ID, ids, !form.Clear)
	if err != nil {
		return err
	}
	verb := "Marked %d %s as sensitive."
	if form.Clear {
		verb = "Cleared the sensitive mark of %d %s."
	}
	msg := fmt.Sprintf(verb, changed, plural(changed, "item", "items"))
	if len(unknown) > 0 {
		shown := unknown[:min(len(unknown), 10)]
		msg += fmt.Sprintf(" No item has the id %s", strings.Join(shown, ", "))
		if len(unknown) > len(shown) {
			msg += fmt.Sprintf(" (and %d more)", len(unknown)-len(shown))
		}
		msg += "."
	}
	s.sessions.Put(ctx, sessionFlash, msg)
	http.Redirect(w, r, projectPath(p.ID)+"#sensitive", http.StatusSeeOther)
	return nil
}
