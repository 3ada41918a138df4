package projects

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	"github.com/attune/attune/web/views/project"
)

// PeoplePage shows a project's leads each annotator's status: qualification
// in the current attempt, real items submitted, paused queue and drift.
func (s *Handler) PeoplePage(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	pol, err := s.DB.CalibrationPolicy(ctx, p.ID)
	if err != nil {
		return err
	}
	people, err := s.DB.ListPeople(ctx, p.ID)
	if err != nil {
		return err
	}
	page := project.PeoplePage{Chrome: s.Chrome(r, "People · "+p.Name, "home"), ID: p.ID, Name: p.Name,
		Qualify: pol.Qualify, PassPercent: pol.PassPercent}
	for _, m := range people {
		page.People = append(page.People, project.Person{
			UserID: m.UserID, Name: strings.TrimSpace(m.Name), Email: m.Email,
			Qualification: string(m.Qualification), Attempt: m.Attempt.Number, Passed: m.Attempt.Passed, Answered: m.Attempt.Answered,
			Submitted: m.Submitted, Paused: m.Paused, PausedWhy: m.PausedWhy,
			Drifting: strings.Join(m.Calibration.DriftingOn, ", "), Alert: m.Alert,
		})
	}
	s.Render(w, r, http.StatusOK, project.PeopleView(page))
	return nil
}

// Requalify starts a new qualification attempt for one annotator, from the
// people page's form: attempt is the attempt the lead saw, so that a
// second lead's click on the same row does not start another. A refusal
// (stale attempt, a lead, a bad attempt) goes back to the page as a
// flash message.
func (s *Handler) Requalify(w http.ResponseWriter, r *http.Request) error {
	p, uid, err := s.memberInPath(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	back := kit.PeoplePath(p.ID)
	attempt, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("attempt")))
	if err != nil {
		s.FlashError(ctx, "Nobody was re-qualified: the form did not say which attempt you saw; reload the page and try again.")
		http.Redirect(w, r, back, http.StatusSeeOther)
		return nil
	}
	viewer := kit.UserFrom(ctx)
	n, err := s.DB.Requalify(ctx, &viewer.ID, p.ID, uid, attempt)
	var invalid *attune.ValidationError
	if errors.As(err, &invalid) || errors.Is(err, attune.ErrConflict) {
		s.FlashError(ctx, "Nobody was re-qualified: "+attune.PublicMessage(err)+".")
		http.Redirect(w, r, back, http.StatusSeeOther)
		return nil
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, "Re-qualifying: attempt "+strconv.Itoa(n)+" has begun; they are served the practice items again.")
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

// apiPerson is one annotator's status in the API.
type apiPerson struct {
	UserID        int64    `json:"user_id"`
	Email         string   `json:"email"`
	Name          string   `json:"name"`
	Qualification string   `json:"qualification"`
	Attempt       int      `json:"attempt"`
	Answered      int      `json:"answered"`
	Passed        int      `json:"passed"`
	Submitted     int      `json:"submitted"`
	Paused        bool     `json:"paused"`
	PausedWhy     string   `json:"paused_why"`
	Drifting      bool     `json:"drifting"`
	DriftingOn    []string `json:"drifting_on"`
	Alert         string   `json:"alert"`
}

func apiPersonOf(p store.Person) apiPerson {
	return apiPerson{UserID: p.UserID, Email: p.Email, Name: p.Name, Qualification: string(p.Qualification),
		Attempt: p.Attempt.Number, Answered: p.Attempt.Answered, Passed: p.Attempt.Passed, Submitted: p.Submitted,
		Paused: p.Paused, PausedWhy: p.PausedWhy, Drifting: p.Calibration.Drifting, DriftingOn: p.Calibration.DriftingOn, Alert: p.Alert}
}

// APIPeople lists the project's annotators with their status (its leads).
func (s *Handler) APIPeople(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "see its people")
	if err != nil {
		return 0, nil, err
	}
	people, err := s.DB.ListPeople(r.Context(), p.ID)
	if err != nil {
		return 0, nil, err
	}
	out := make([]apiPerson, 0, len(people))
	for _, m := range people {
		out = append(out, apiPersonOf(m))
	}
	return http.StatusOK, map[string]any{"people": out}, nil
}

// APIRequalify starts a new qualification attempt for one annotator (its
// leads): the body's attempt is the one the caller saw, and a stale one is
// refused with 409. 200 with the person as they stand now.
func (s *Handler) APIRequalify(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	p, err := s.APILeadProject(r, u, "re-qualify its people")
	if err != nil {
		return 0, nil, err
	}
	uid, err := kit.PathInt(r, "userID")
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		Attempt *int `json:"attempt"`
	}
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	if body.Attempt == nil {
		return 0, nil, attune.Invalid("attempt", "give the person's current attempt (see GET /api/v1/projects/{id}/people)")
	}
	if _, err := s.DB.Requalify(ctx, &u.ID, p.ID, uid, *body.Attempt); err != nil {
		return 0, nil, err
	}
	person, err := s.DB.FindPerson(ctx, p.ID, uid)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, apiPersonOf(person), nil
}
