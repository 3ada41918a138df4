package account

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	"github.com/attune/attune/web/views/admin"
)

// AdminUsers lists every account, with the form to add one.
func (s *Handler) AdminUsers(w http.ResponseWriter, r *http.Request) error {
	return s.renderUsers(w, r, http.StatusOK, admin.NewUserForm{Role: string(attune.RoleAnnotator)}, nil)
}

func (s *Handler) renderUsers(w http.ResponseWriter, r *http.Request, status int, form admin.NewUserForm, errs map[string]string) error {
	return s.renderUsersPage(w, r, status, admin.UsersPage{New: form, Errors: errs})
}

// renderUsersPage fills page (which carries any forms and messages) with
// the accounts and renders it.
func (s *Handler) renderUsersPage(w http.ResponseWriter, r *http.Request, status int, page admin.UsersPage) error {
	users, err := s.DB.ListUsers(r.Context())
	if err != nil {
		return err
	}
	locks, err := s.DB.SignInLockouts(r.Context(), s.limits)
	if err != nil {
		return err
	}
	viewer := kit.UserFrom(r.Context())
	page.Chrome = s.Chrome(r, "Users", "users")
	for _, role := range attune.Roles {
		page.Roles = append(page.Roles, string(role))
	}
	for _, u := range users {
		page.Users = append(page.Users, admin.User{
			ID: u.ID, Email: u.Email, Name: u.Name, Role: string(u.Role), Disabled: u.Disabled(),
			Created: u.CreatedAt.UTC().Format("2006-01-02"), IsViewer: u.ID == viewer.ID,
			SignInLock: lockText(locks[u.ID]),
		})
	}
	s.Render(w, r, status, admin.Users(page))
	return nil
}

// AdminAddUser creates an account with the role and password the admin
// gave it.
func (s *Handler) AdminAddUser(w http.ResponseWriter, r *http.Request) error {
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
	actor := kit.UserFrom(r.Context()).ID
	_, err = s.DB.CreateUser(r.Context(), &actor, store.NewUser{Email: email, Name: form.Name, Role: role, PasswordHash: hash})
	if errors.Is(err, attune.ErrConflict) {
		return s.renderUsers(w, r, http.StatusConflict, form, map[string]string{"email": attune.PublicMessage(err)})
	}
	if err != nil {
		return err
	}
	s.Flash(r.Context(), "Added "+email+" as "+string(role)+".")
	http.Redirect(w, r, "/admin/users", http.StatusSeeOther)
	return nil
}

// AdminSetRole changes an account's global role.
func (s *Handler) AdminSetRole(w http.ResponseWriter, r *http.Request) error {
	id, err := kit.PathInt(r, "id")
	if err != nil {
		return err
	}
	role, err := attune.ParseRole(r.PostFormValue("role"))
	if err != nil {
		return err
	}
	actor := kit.UserFrom(r.Context()).ID
	ended, err := s.DB.SetUserRole(r.Context(), &actor, id, role)
	msg := "Role changed to " + string(role) + "."
	switch {
	case ended == 1:
		msg += " The account no longer leads the one project it led: it is an annotator there now."
	case ended > 1:
		msg += fmt.Sprintf(" The account no longer leads the %d projects it led: it is an annotator there now.", ended)
	}
	return s.afterUserChange(w, r, err, msg)
}

// AdminDisable stops an account from signing in.
func (s *Handler) AdminDisable(w http.ResponseWriter, r *http.Request) error {
	return s.setDisabled(w, r, true)
}

// AdminEnable lets a disabled account sign in again.
func (s *Handler) AdminEnable(w http.ResponseWriter, r *http.Request) error {
	return s.setDisabled(w, r, false)
}

func (s *Handler) setDisabled(w http.ResponseWriter, r *http.Request, disabled bool) error {
	id, err := kit.PathInt(r, "id")
	if err != nil {
		return err
	}
	actor := kit.UserFrom(r.Context()).ID
	msg := "Account enabled."
	if disabled {
		msg = "Account disabled: it can no longer sign in."
	}
	return s.afterUserChange(w, r, s.DB.SetUserDisabled(r.Context(), &actor, id, disabled), msg)
}

// AdminSetPassword is an admin's reset of an account's password. Besides
// the password it ends every session of the account and clears its sign-in
// lockout; it revokes the account's API tokens only when asked, and the
// outcome says what became of them either way.
func (s *Handler) AdminSetPassword(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id, err := kit.PathInt(r, "id")
	if err != nil {
		return err
	}
	target, err := s.DB.FindUserByID(ctx, id)
	if err != nil {
		return err
	}
	pw := r.PostFormValue("password")
	if msg := password.Check(pw); msg != "" {
		return s.renderUsersPage(w, r, http.StatusUnprocessableEntity, admin.UsersPage{
			New:         admin.NewUserForm{Role: string(attune.RoleAnnotator)},
			ResetErrors: map[int64]string{id: "The password " + msg + "."},
		})
	}
	hash, err := s.hasher.Hash(ctx, pw)
	if err != nil {
		if ctx.Err() != nil {
			return s.busy(w, r)
		}
		return err
	}
	viewer := kit.UserFrom(ctx)
	done, err := s.DB.SetUserPassword(ctx, &viewer.ID, id, store.PasswordChange{
		Hash: hash, RevokeTokens: r.PostFormValue("revoke_tokens") != ""})
	if err != nil {
		return err
	}
	if id == viewer.ID {
		// An admin resetting their own password stays signed in here.
		if err := s.Sessions.RenewToken(ctx); err != nil {
			return err
		}
		s.Sessions.Put(ctx, kit.SessionEpoch, done.SessionEpoch)
	}
	s.Flash(ctx, resetOutcome(target.Email, done))
	http.Redirect(w, r, "/admin/users", http.StatusSeeOther)
	return nil
}

// resetOutcome tells the admin everything a reset did, tokens included.
func resetOutcome(email string, done store.PasswordChanged) string {
	msg := "Password of " + email + " set. Every session of the account has ended"
	if done.LockoutCleared > 0 {
		msg += fmt.Sprintf(" and its sign-in lockout is cleared (%d failed sign-ins forgiven)", done.LockoutCleared)
	} else {
		msg += "; it had no sign-in lockout to clear"
	}
	switch {
	case done.TokensRevoked == 1:
		msg += ". Its API token was revoked."
	case done.TokensRevoked > 1:
		msg += fmt.Sprintf(". Its %d API tokens were revoked.", done.TokensRevoked)
	case done.TokensKept == 1:
		msg += ". Its API token still works: reset again with “Also revoke their API tokens” ticked if it may be compromised."
	case done.TokensKept > 1:
		msg += fmt.Sprintf(". Its %d API tokens still work: reset again with “Also revoke their API tokens” ticked if they may be compromised.", done.TokensKept)
	default:
		msg += ". It has no API tokens."
	}
	return msg
}

// lockText says how an account stands under the sign-in limits, or
// nothing when it is not locked.
func lockText(l store.SignInLockout) string {
	switch {
	case l.Everywhere:
		return fmt.Sprintf("sign-in locked (%d failed sign-ins)", l.Failures)
	case l.Addresses == 1:
		return fmt.Sprintf("sign-in locked from one address (%d failed sign-ins)", l.Failures)
	case l.Addresses > 1:
		return fmt.Sprintf("sign-in locked from %d addresses (%d failed sign-ins)", l.Addresses, l.Failures)
	}
	return ""
}

// AdminClearSignInLock forgives the failed sign-ins counted against an
// account, so that its owner can sign in at once with the password they
// have; it is in the audit log.
func (s *Handler) AdminClearSignInLock(w http.ResponseWriter, r *http.Request) error {
	id, err := kit.PathInt(r, "id")
	if err != nil {
		return err
	}
	target, err := s.DB.FindUserByID(r.Context(), id)
	if err != nil {
		return err
	}
	actor := kit.UserFrom(r.Context()).ID
	n, err := s.DB.ClearSignInLock(r.Context(), &actor, id)
	msg := fmt.Sprintf("Sign-in lock of %s cleared (%d failed sign-ins forgiven): it can sign in now.", target.Email, n)
	if n == 0 {
		msg = target.Email + " had no failed sign-ins to forgive."
	}
	return s.afterUserChange(w, r, err, msg)
}

// afterUserChange redirects back to the users page with the outcome: a
// refused change (the last admin) becomes an error message there.
func (s *Handler) afterUserChange(w http.ResponseWriter, r *http.Request, err error, notice string) error {
	switch {
	case errors.Is(err, attune.ErrConflict):
		s.FlashError(r.Context(), attune.PublicMessage(err))
	case err != nil:
		return err
	default:
		s.Flash(r.Context(), notice)
	}
	http.Redirect(w, r, "/admin/users", http.StatusSeeOther)
	return nil
}
