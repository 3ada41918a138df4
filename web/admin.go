package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/views/admin"
)

func (s *Server) adminUsers(w http.ResponseWriter, r *http.Request) error {
	return s.renderUsers(w, r, http.StatusOK, admin.NewUserForm{Role: string(attune.RoleAnnotator)}, nil)
}

func (s *Server) renderUsers(w http.ResponseWriter, r *http.Request, status int, form admin.NewUserForm, errs map[string]string) error {
	users, err := s.db.ListUsers(r.Context())
	if err != nil {
		return err
	}
	viewer := userFrom(r.Context())
	page := admin.UsersPage{Chrome: s.chrome(r, "Users", "users"), New: form, Errors: errs}
	for _, role := range attune.Roles {
		page.Roles = append(page.Roles, string(role))
	}
	for _, u := range users {
		page.Users = append(page.Users, admin.User{
			ID: u.ID, Email: u.Email, Name: u.Name, Role: string(u.Role), Disabled: u.Disabled(),
			Created: u.CreatedAt.UTC().Format("2006-01-02"), IsViewer: u.ID == viewer.ID,
		})
	}
	s.render(w, r, status, admin.Users(page))
	return nil
}

func (s *Server) adminAddUser(w http.ResponseWriter, r *http.Request) error {
	form := admin.NewUserForm{
		Email: strings.TrimSpace(r.PostFormValue("email")),
		Name:  strings.TrimSpace(r.PostFormValue("name")),
		Role:  r.PostFormValue("role"),
	}
	pw := r.PostFormValue("password")
	errs := map[string]string{}
	email, err := attune.NormalizeEmail(form.Email)
	if err != nil {
		errs["email"] = "Enter a valid email address."
	}
	role, err := attune.ParseRole(form.Role)
	if err != nil {
		errs["role"] = "Choose admin, lead or annotator."
	}
	if msg := password.Check(pw); msg != "" {
		errs["password"] = "The password " + msg + "."
	}
	if len(form.Name) > 200 {
		errs["name"] = "Keep the name under 200 characters."
	}
	if len(errs) > 0 {
		return s.renderUsers(w, r, http.StatusUnprocessableEntity, form, errs)
	}
	hash, err := s.hasher.Hash(r.Context(), pw)
	if err != nil {
		return err
	}
	actor := userFrom(r.Context()).ID
	_, err = s.db.CreateUser(r.Context(), &actor, store.NewUser{Email: email, Name: form.Name, Role: role, PasswordHash: hash})
	if errors.Is(err, attune.ErrConflict) {
		return s.renderUsers(w, r, http.StatusConflict, form, map[string]string{"email": attune.PublicMessage(err)})
	}
	if err != nil {
		return err
	}
	s.sessions.Put(r.Context(), sessionFlash, "Added "+email+" as "+string(role)+".")
	http.Redirect(w, r, "/admin/users", http.StatusSeeOther)
	return nil
}

func (s *Server) adminSetRole(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	role, err := attune.ParseRole(r.PostFormValue("role"))
	if err != nil {
		return err
	}
	actor := userFrom(r.Context()).ID
	return s.afterUserChange(w, r, s.db.SetUserRole(r.Context(), &actor, id, role), "Role changed to "+string(role)+".")
}

func (s *Server) adminDisable(w http.ResponseWriter, r *http.Request) error {
	return s.setDisabled(w, r, true)
}

func (s *Server) adminEnable(w http.ResponseWriter, r *http.Request) error {
	return s.setDisabled(w, r, false)
}

func (s *Server) setDisabled(w http.ResponseWriter, r *http.Request, disabled bool) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	actor := userFrom(r.Context()).ID
	msg := "Account enabled."
	if disabled {
		msg = "Account disabled: it can no longer sign in."
	}
	return s.afterUserChange(w, r, s.db.SetUserDisabled(r.Context(), &actor, id, disabled), msg)
}

// afterUserChange redirects back to the users page with the outcome: a
// refused change (the last admin) becomes an error message there.
func (s *Server) afterUserChange(w http.ResponseWriter, r *http.Request, err error, notice string) error {
	switch {
	case errors.Is(err, attune.ErrConflict):
		s.sessions.Put(r.Context(), sessionFlashError, attune.PublicMessage(err))
	case err != nil:
		return err
	default:
		s.sessions.Put(r.Context(), sessionFlash, notice)
	}
	http.Redirect(w, r, "/admin/users", http.StatusSeeOther)
	return nil
}

func pathID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, attune.NotFound("id")
	}
	return id, nil
}
