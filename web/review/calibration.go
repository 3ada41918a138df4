package review

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/web/kit"
	goldview "github.com/attune/attune/web/views/gold"
)

func calibrationPath(projectID int64) string {
	return fmt.Sprintf("/projects/%d/calibration", projectID)
}

// CalibrationPage shows the project's calibration rules and set to its
// leads.
func (s *Handler) CalibrationPage(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	page, err := s.calibrationView(r, p)
	if err != nil {
		return err
	}
	s.Render(w, r, http.StatusOK, goldview.CalibrationView(page))
	return nil
}

func (s *Handler) calibrationView(r *http.Request, p *attune.Project) (goldview.CalibrationPage, error) {
	ctx := r.Context()
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return goldview.CalibrationPage{}, err
	}
	pol, err := s.DB.CalibrationPolicy(ctx, p.ID)
	if err != nil {
		return goldview.CalibrationPage{}, err
	}
	items, err := s.DB.ListCalibration(ctx, p.ID)
	if err != nil {
		return goldview.CalibrationPage{}, err
	}
	base := calibrationPath(p.ID)
	page := goldview.CalibrationPage{
		Chrome:      s.Chrome(r, "Calibration · "+p.Name, "home"),
		ProjectName: p.Name,
		Links:       goldLinks(p),
		Policy:      templ.SafeURL(base + "/policy"),
		Add:         templ.SafeURL(base),
		Remove:      templ.SafeURL(base + "/remove"),
		People:      templ.SafeURL(kit.PeoplePath(p.ID)),
		Qualify:     strconv.Itoa(pol.Qualify),
		Every:       strconv.Itoa(pol.Every),
		Pass:        strconv.Itoa(pol.PassPercent),
	}
	for _, it := range def.Items {
		page.RubricItems = append(page.RubricItems, goldview.RubricItem{Key: it.Key, Label: it.Label})
	}
	for _, it := range items {
		page.Items = append(page.Items, goldview.CalibrationItem{SourceID: it.SourceID, Gold: goldSummary(def, it.Gold),
			Explained: len(it.Explanations), Answered: it.Answered, Passed: it.Passed})
	}
	return page, nil
}

// goldSummary writes gold answers as key=value in the rubric's order.
func goldSummary(def *rubric.Definition, answers map[string]string) string {
	parts := make([]string, 0, len(answers))
	for _, it := range def.Items {
		if v, ok := answers[it.Key]; ok {
			parts = append(parts, it.Key+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

// AddCalibration promotes a gold item (or replaces its explanations) from
// the page's form: item, and explain.KEY per rubric item.
func (s *Handler) AddCalibration(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, maxGoldForm)
	if err := r.ParseForm(); err != nil {
		return attune.Invalid("form", "could not be read")
	}
	source := strings.TrimSpace(r.PostFormValue("item"))
	explanations := map[string]string{}
	for k, vs := range r.PostForm {
		if key, ok := strings.CutPrefix(k, "explain."); ok && len(vs) > 0 {
			if v := strings.TrimSpace(vs[0]); v != "" {
				explanations[key] = v
			}
		}
	}
	actor := kit.UserFrom(ctx).ID
	err = s.promote(ctx, &actor, p, source, explanations)
	var v *attune.ValidationError
	if errors.As(err, &v) {
		page, verr := s.calibrationView(r, p)
		if verr != nil {
			return verr
		}
		msgs := make([]string, 0, len(v.Fields))
		for _, m := range v.Fields {
			msgs = append(msgs, m)
		}
		page.AddItem, page.AddExplanations, page.AddError = source, explanations, strings.Join(msgs, "; ")
		s.Render(w, r, http.StatusUnprocessableEntity, goldview.CalibrationView(page))
		return nil
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, fmt.Sprintf("%s is in the calibration set.", source))
	http.Redirect(w, r, calibrationPath(p.ID), http.StatusSeeOther)
	return nil
}

// promote is the one way an item joins a calibration set, from the page
// and the API: explanations checked against the rubric, then stored.
func (s *Handler) promote(ctx context.Context, actor *int64, p *attune.Project, source string, explanations map[string]string) (err error) {
	if source == "" {
		return attune.Invalid("item", "enter the item's id from the dataset")
	}
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return err
	}
	if err := calibration.CheckExplanations(def, explanations); err != nil {
		return attune.Invalid("explanations", err.Error())
	}
	_, err = s.DB.AddCalibration(ctx, actor, p.ID, source, explanations)
	return err
}

// RemoveCalibration takes an item, named by its id from the dataset, out
// of the calibration set.
func (s *Handler) RemoveCalibration(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, maxGoldForm)
	source := strings.TrimSpace(r.PostFormValue("item"))
	if source == "" {
		return attune.Invalid("item", "name the item to remove by its id from the dataset")
	}
	actor := kit.UserFrom(ctx).ID
	if err := s.DB.RemoveCalibration(ctx, &actor, p.ID, source); err != nil {
		return err
	}
	s.Flash(ctx, fmt.Sprintf("%s left the calibration set; answers already given to it are kept.", source))
	http.Redirect(w, r, calibrationPath(p.ID), http.StatusSeeOther)
	return nil
}

// CalibrationPolicy saves the project's calibration rules.
func (s *Handler) CalibrationPolicy(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, maxGoldForm)
	typed := map[string]string{}
	var pol calibration.Policy
	var bad []string
	for name, dst := range map[string]*int{"qualify": &pol.Qualify, "every": &pol.Every, "pass": &pol.PassPercent} {
		typed[name] = strings.TrimSpace(r.PostFormValue(name))
		n, err := strconv.Atoi(typed[name])
		if err != nil {
			bad = append(bad, name)
		}
		*dst = n
	}
	var problem string
	switch {
	case len(bad) > 0:
		problem = "Enter whole numbers."
	default:
		if err := pol.Check(); err != nil {
			problem = err.Error()
		}
	}
	if problem != "" {
		page, err := s.calibrationView(r, p)
		if err != nil {
			return err
		}
		page.Qualify, page.Every, page.Pass, page.PolicyError = typed["qualify"], typed["every"], typed["pass"], problem
		s.Render(w, r, http.StatusUnprocessableEntity, goldview.CalibrationView(page))
		return nil
	}
	actor := kit.UserFrom(ctx).ID
	if err := s.DB.SetCalibrationPolicy(ctx, &actor, p.ID, pol); err != nil {
		return err
	}
	s.Flash(ctx, "Saved the calibration rules.")
	http.Redirect(w, r, calibrationPath(p.ID), http.StatusSeeOther)
	return nil
}

// apiCalibrationItem is one item of the calibration set as the API writes it.
type apiCalibrationItem struct {
	ItemID       int64             `json:"item_id"`
	SourceID     string            `json:"source_id"`
	Gold         map[string]string `json:"gold"`
	Explanations map[string]string `json:"explanations"`
	AddedAt      time.Time         `json:"added_at"`
	Answered     int               `json:"answered"`
	Passed       int               `json:"passed"`
}

type apiCalibrationSet struct {
	Qualify     int                  `json:"qualify"`
	Every       int                  `json:"every"`
	PassPercent int                  `json:"pass_percent"`
	Items       []apiCalibrationItem `json:"items"`
	// NextCursor pages the items: the rules come with every page.
	NextCursor *string `json:"next_cursor"`
}

// APICalibration lists the project's calibration rules and set.
func (s *Handler) APICalibration(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "manage its calibration set")
	if err != nil {
		return 0, nil, err
	}
	pol, err := s.DB.CalibrationPolicy(r.Context(), p.ID)
	if err != nil {
		return 0, nil, err
	}
	page, err := kit.ReadPage(r)
	if err != nil {
		return 0, nil, err
	}
	items, next, err := s.DB.CalibrationPage(r.Context(), p.ID, page.Cursor, page.Limit)
	if err != nil {
		return 0, nil, err
	}
	out := apiCalibrationSet{NextCursor: kit.NextCursor(next), Qualify: pol.Qualify, Every: pol.Every, PassPercent: pol.PassPercent, Items: []apiCalibrationItem{}}
	for _, it := range items {
		out.Items = append(out.Items, apiCalibrationItem{ItemID: it.ItemID, SourceID: it.SourceID, Gold: it.Gold,
			Explanations: it.Explanations, AddedAt: it.AddedAt.UTC(), Answered: it.Answered, Passed: it.Passed})
	}
	return http.StatusOK, out, nil
}

// APIAddCalibration promotes a gold item: {"item": source id,
// "explanations": {rubric item: text}}. 201 with the set's entry.
func (s *Handler) APIAddCalibration(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "manage its calibration set")
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		Item         string            `json:"item"`
		Explanations map[string]string `json:"explanations"`
	}
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	source := strings.TrimSpace(body.Item)
	if err := s.promote(r.Context(), &u.ID, p, source, body.Explanations); err != nil {
		return 0, nil, err
	}
	items, err := s.DB.ListCalibration(r.Context(), p.ID)
	if err != nil {
		return 0, nil, err
	}
	for _, it := range items {
		if it.SourceID == source {
			return http.StatusCreated, apiCalibrationItem{ItemID: it.ItemID, SourceID: it.SourceID, Gold: it.Gold,
				Explanations: it.Explanations, AddedAt: it.AddedAt.UTC(), Answered: it.Answered, Passed: it.Passed}, nil
		}
	}
	return 0, nil, fmt.Errorf("calibration item %q vanished after it was added", source)
}

// APIRemoveCalibration takes an item (by attune's id, as every item
// route names it) out of the set: 204, or 409 when it is not in the set.
func (s *Handler) APIRemoveCalibration(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "manage its calibration set")
	if err != nil {
		return 0, nil, err
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return 0, nil, err
	}
	it, err := s.DB.FindItem(r.Context(), p.ID, itemID)
	if err != nil {
		return 0, nil, err
	}
	if err := s.DB.RemoveCalibration(r.Context(), &u.ID, p.ID, it.SourceID); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// APICalibrationPolicy sets the project's calibration rules (its leads),
// as the calibration page does: {"qualify", "every", "pass_percent"}, each
// optional, the others kept; checked by calibration.Policy.Check. 200
// with the rules as they are now.
func (s *Handler) APICalibrationPolicy(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	p, err := s.APILeadProject(r, u, "manage its calibration set")
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		Qualify     *int `json:"qualify"`
		Every       *int `json:"every"`
		PassPercent *int `json:"pass_percent"`
	}
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	pol, err := s.DB.CalibrationPolicy(ctx, p.ID)
	if err != nil {
		return 0, nil, err
	}
	for _, f := range []struct {
		from *int
		to   *int
	}{{body.Qualify, &pol.Qualify}, {body.Every, &pol.Every}, {body.PassPercent, &pol.PassPercent}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
	if err := pol.Check(); err != nil {
		return 0, nil, attune.Invalid("policy", err.Error())
	}
	if err := s.DB.SetCalibrationPolicy(ctx, &u.ID, p.ID, pol); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]int{"qualify": pol.Qualify, "every": pol.Every, "pass_percent": pol.PassPercent}, nil
}
