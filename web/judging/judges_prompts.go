package judging

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/internal/textdiff"
	"github.com/attune/attune/web/kit"
	judgeview "github.com/attune/attune/web/views/judge"
)

// A judge's prompt versions for a project's rubric (see
// store.CreateJudgePrompt): the list, one version with its diff against
// the version it was edited from, and the form that makes a new version
// from a copy. They sit under the project because a version belongs to
// the project's rubric version, and the project's leads are the ones who
// run judges on it.

func promptsPath(projectID, judgeID int64) string {
	return fmt.Sprintf("/projects/%d/judges/%d/prompts", projectID, judgeID)
}

// promptAccess loads the project (for one of its leads), its rubric and
// the judge named in the path.
func (s *Handler) promptAccess(r *http.Request) (*attune.Project, *rubric.Definition, *attune.Judge, error) {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return nil, nil, nil, err
	}
	def, j, err := s.promptJudge(r, p)
	return p, def, j, err
}

// promptJudge loads the rubric of p and the judge named in the path.
func (s *Handler) promptJudge(r *http.Request, p *attune.Project) (*rubric.Definition, *attune.Judge, error) {
	id, err := kit.PathInt(r, "judge")
	if err != nil {
		return nil, nil, err
	}
	j, err := s.DB.FindJudge(r.Context(), id)
	if err != nil {
		return nil, nil, err
	}
	def, err := s.DB.FindRubricByID(r.Context(), p.RubricVersionID)
	if err != nil {
		return nil, nil, err
	}
	return def, j, nil
}

// promptVersionArg reads a version number (a path value or a field);
// empty is version 1.
func promptVersionArg(v string) (int, bool) {
	if v == "" {
		return 1, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 1
}

// PromptsPage lists a judge's prompt versions for the project's rubric.
func (s *Handler) PromptsPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, def, j, err := s.promptAccess(r)
	if err != nil {
		return err
	}
	vs, err := s.DB.ListJudgePrompts(ctx, j.ID, p.RubricVersionID)
	if err != nil {
		return err
	}
	base := promptsPath(p.ID, j.ID)
	page := judgeview.PromptsPage{
		Chrome: s.Chrome(r, "Prompts of "+j.Name, "home"), JudgeName: j.Name, ProjectName: p.Name,
		ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)), RubricRef: def.Ref().String(), CanEdit: j.MayEditPrompts(kit.UserFrom(ctx)),
	}
	for _, v := range vs {
		row := judgeview.PromptRow{Version: v.Version, URL: templ.SafeURL(fmt.Sprintf("%s/%d", base, v.Version)), Parent: v.ParentVersion,
			Author: v.AuthorEmail, Created: stamp(v.CreatedAt), Runs: v.Runs}
		if page.CanEdit {
			row.EditURL = templ.SafeURL(fmt.Sprintf("%s/new?from=%d", base, v.Version))
		}
		page.Versions = append(page.Versions, row)
	}
	s.Render(w, r, http.StatusOK, judgeview.Prompts(page))
	return nil
}

// PromptPage shows one prompt version with its diff against the version
// it was edited from.
func (s *Handler) PromptPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, def, j, err := s.promptAccess(r)
	if err != nil {
		return err
	}
	n, ok := promptVersionArg(r.PathValue("version"))
	if !ok {
		return attune.NotFound("prompt version")
	}
	v, err := s.DB.FindJudgePrompt(ctx, j.ID, p.RubricVersionID, n)
	if err != nil {
		return err
	}
	var parent *attune.JudgePrompt
	if v.ParentID != nil {
		if parent, err = s.DB.FindJudgePromptByID(ctx, *v.ParentID); err != nil {
			return err
		}
	}
	base := promptsPath(p.ID, j.ID)
	page := judgeview.PromptPage{
		Chrome: s.Chrome(r, fmt.Sprintf("%s, prompt v%d", j.Name, v.Version), "home"), JudgeName: j.Name, ProjectName: p.Name,
		ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)), ListURL: templ.SafeURL(base), Version: v.Version, Parent: v.ParentVersion,
		Author: v.AuthorEmail, Created: stamp(v.CreatedAt), Runs: v.Runs,
		RunAction: templ.SafeURL(fmt.Sprintf("/projects/%d/runs", p.ID)), JudgeID: strconv.FormatInt(j.ID, 10),
	}
	if j.MayEditPrompts(kit.UserFrom(ctx)) {
		page.EditURL = templ.SafeURL(fmt.Sprintf("%s/new?from=%d", base, v.Version))
	}
	for _, it := range def.Items {
		pi := judgeview.PromptItem{Key: it.Key, Label: it.Label, Text: v.Prompts[it.Key]}
		if parent != nil {
			d := textdiff.Lines(parent.Prompts[it.Key], pi.Text)
			pi.Changed = textdiff.Changed(d)
			for _, l := range d {
				pi.Diff = append(pi.Diff, judgeview.DiffLine{Op: [...]string{" ", "-", "+"}[l.Op], Text: l.Text})
			}
		}
		page.Items = append(page.Items, pi)
	}
	s.Render(w, r, http.StatusOK, judgeview.Prompt(page))
	return nil
}

// promptForm builds the new-version form over the given templates.
func (s *Handler) promptForm(r *http.Request, p *attune.Project, def *rubric.Definition, j *attune.Judge, from int,
	prompts map[string]string, errs map[string]string) judgeview.PromptForm {
	base := promptsPath(p.ID, j.ID)
	f := judgeview.PromptForm{
		Chrome: s.Chrome(r, "New prompt version of "+j.Name, "home"), JudgeName: j.Name, ProjectName: p.Name,
		ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)), ListURL: templ.SafeURL(base), Action: templ.SafeURL(base),
		From: from, Slot: def.Judge.Slot, Errors: errs,
	}
	for _, it := range def.Items {
		f.Items = append(f.Items, judgeview.PromptField{Name: attune.PromptField(it.Key), Key: it.Key, Label: it.Label, Text: prompts[it.Key]})
	}
	return f
}

// mayEditPrompts refuses, with 403, a viewer who may not make versions.
func mayEditPrompts(u *attune.User, j *attune.Judge) error {
	if !j.MayEditPrompts(u) {
		return attune.Forbidden("Only the judge's owner or an admin can make a new version of its prompts.")
	}
	return nil
}

// NewPromptPage shows the form that makes a new prompt version from a copy
// of ?from= (version 1 when absent), for the judge's owner or an admin.
func (s *Handler) NewPromptPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, def, j, err := s.promptAccess(r)
	if err != nil {
		return err
	}
	if err := mayEditPrompts(kit.UserFrom(ctx), j); err != nil {
		return err
	}
	from, ok := promptVersionArg(r.URL.Query().Get("from"))
	if !ok {
		return attune.NotFound("prompt version")
	}
	v, err := s.DB.FindJudgePrompt(ctx, j.ID, p.RubricVersionID, from)
	if err != nil {
		return err
	}
	s.Render(w, r, http.StatusOK, judgeview.EditPrompt(s.promptForm(r, p, def, j, from, v.Prompts, nil)))
	return nil
}

// CreatePrompt stores the form's new prompt version and goes to it; a
// refused form is shown again with its problems.
func (s *Handler) CreatePrompt(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, def, j, err := s.promptAccess(r)
	if err != nil {
		return err
	}
	if err := mayEditPrompts(kit.UserFrom(ctx), j); err != nil {
		return err
	}
	from, ok := promptVersionArg(strings.TrimSpace(r.PostFormValue("from")))
	if !ok {
		from = 1
	}
	prompts := map[string]string{}
	for _, it := range def.Items {
		if v, ok := r.PostForm[attune.PromptField(it.Key)]; ok && len(v) > 0 {
			// Browsers send a textarea's line ends as CRLF; the rubric's
			// prompts, and so the diff, use LF.
			prompts[it.Key] = strings.ReplaceAll(v[0], "\r\n", "\n")
		}
	}
	v, err := s.DB.CreateJudgePrompt(ctx, &kit.UserFrom(ctx).ID, store.NewJudgePrompt{JudgeID: j.ID, RubricVersionID: p.RubricVersionID,
		Parent: from, Prompts: prompts})
	if errors.Is(err, attune.ErrInvalid) {
		errs := kit.FieldErrors(err)
		// Text that is not storable is not shown back either: the page
		// could not hold it.
		for k, t := range prompts {
			if attune.TextProblem(t) != "" {
				prompts[k] = ""
			}
		}
		s.Render(w, r, http.StatusUnprocessableEntity, judgeview.EditPrompt(s.promptForm(r, p, def, j, from, prompts, errs)))
		return nil
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, fmt.Sprintf("Saved prompt v%d of %s. Run it to see how it agrees with people.", v.Version, j.Name))
	http.Redirect(w, r, fmt.Sprintf("%s/%d", promptsPath(p.ID, j.ID), v.Version), http.StatusSeeOther)
	return nil
}
