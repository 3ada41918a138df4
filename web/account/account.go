package account

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	accountview "github.com/attune/attune/web/views/account"
)

// maxTokenName bounds a token's name, which only tells tokens apart.
const maxTokenName = 100

// AccountPage shows the viewer's own account and API tokens.
func (s *Handler) AccountPage(w http.ResponseWriter, r *http.Request) error {
	page, err := s.accountView(r)
	if err != nil {
		return err
	}
	s.Render(w, r, http.StatusOK, accountview.View(page))
	return nil
}

// accountView builds the account page with the viewer's tokens.
func (s *Handler) accountView(r *http.Request) (accountview.Page, error) {
	u := kit.UserFrom(r.Context())
	page := accountview.Page{Chrome: s.Chrome(r, "Account", "account"), Email: u.Email, Name: u.Name, Role: string(u.Role),
		RubricExpanded: u.RubricExpanded}
	tokens, err := s.DB.ListAPITokens(r.Context(), u.ID)
	if err != nil {
		return page, err
	}
	for _, t := range tokens {
		row := accountview.Token{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Created: kit.FormatTime(t.CreatedAt), LastUsed: "never", ReadOnly: t.ReadOnly}
		if t.LastUsedAt != nil {
			row.LastUsed = kit.FormatTime(*t.LastUsedAt)
		}
		if t.RevokedAt != nil {
			row.Revoked = kit.FormatTime(*t.RevokedAt)
		}
		page.Tokens = append(page.Tokens, row)
	}
	return page, nil
}

// CreateToken makes a token and shows it in this response only: it is
// never put in the session or a redirect, so the secret exists nowhere but
// in the page the user is looking at (served with Cache-Control: no-store).
func (s *Handler) CreateToken(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := kit.UserFrom(ctx)
	name := strings.TrimSpace(r.PostFormValue("name"))
	readOnly := r.PostFormValue("read_only") == "1"
	var msg string
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		msg = "Give the token a name, so you can tell it apart later."
	case n > maxTokenName:
		msg = "Keep the name to 100 characters or fewer."
	}
	if msg != "" {
		page, err := s.accountView(r)
		if err != nil {
			return err
		}
		page.Form = accountview.TokenForm{Name: name, ReadOnly: readOnly}
		page.Errors = map[string]string{"name": msg}
		s.Render(w, r, http.StatusUnprocessableEntity, accountview.View(page))
		return nil
	}
	secret, _, err := s.DB.CreateAPIToken(ctx, &u.ID, u.ID, name, readOnly)
	if err != nil {
		return err
	}
	page, err := s.accountView(r)
	if err != nil {
		return err
	}
	page.NewToken = &accountview.NewToken{Name: name, Secret: secret}
	s.Render(w, r, http.StatusOK, accountview.View(page))
	return nil
}

// RevokeToken ends one of the viewer's own API tokens.
func (s *Handler) RevokeToken(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := kit.UserFrom(ctx)
	id, err := kit.PathInt(r, "id")
	if err != nil {
		return err
	}
	// The store matches the token on its owner too: someone else's token
	// is not found.
	if err := s.DB.RevokeAPIToken(ctx, &u.ID, u.ID, id); err != nil {
		return err
	}
	s.Flash(ctx, "Token revoked: it no longer works.")
	http.Redirect(w, r, "/account", http.StatusSeeOther)
	return nil
}

// ChangePassword sets the viewer's own password, given the current one.
// It ends every other session of the account and keeps this one; API
// tokens keep working, as the form says. A wrong current password counts
// as a failed sign-in, under the same limits, so that a session left open
// is no way to guess the password.
func (s *Handler) ChangePassword(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := kit.UserFrom(ctx)
	current, next, again := r.PostFormValue("current"), r.PostFormValue("new"), r.PostFormValue("confirm")
	fail := func(status int, errs map[string]string) error {
		page, err := s.accountView(r)
		if err != nil {
			return err
		}
		page.PasswordErrors = errs
		s.Render(w, r, status, accountview.View(page))
		return nil
	}
	errs := map[string]string{}
	if current == "" {
		errs["current"] = "Enter your current password."
	}
	switch msg := password.Check(next); {
	case msg != "":
		errs["new"] = "The new password " + msg + "."
	case next == current:
		errs["new"] = "Choose a new password, not the current one."
	case again != next:
		errs["confirm"] = "This differs from the new password: type the same one twice."
	}
	if len(errs) > 0 {
		return fail(http.StatusUnprocessableEntity, errs)
	}

	start, err := s.DB.StartSignIn(ctx, u.Email, s.clientAddress(r), s.limits)
	if err != nil {
		return err
	}
	switch start.Verdict {
	case store.SignInBusy:
		return s.busy(w, r)
	case store.SignInLocked, store.SignInLockedHere:
		status, msg := s.locked(w, start)
		return fail(status, map[string]string{"form": msg})
	}
	finish := context.WithoutCancel(ctx)
	ok, err := s.hasher.Verify(ctx, u.PasswordHash, current)
	if err != nil {
		s.abandon(finish, start.Attempt)
		if ctx.Err() != nil {
			return s.busy(w, r)
		}
		return fmt.Errorf("verify password of %s: %w", u.Email, err)
	}
	if !ok {
		if err := s.DB.SignInFailed(finish, start.Attempt); err != nil {
			return err
		}
		return fail(http.StatusUnprocessableEntity, map[string]string{"current": "That is not your current password."})
	}
	if err := s.DB.SignInSucceeded(finish, start.Attempt); err != nil {
		return err
	}
	hash, err := s.hasher.Hash(ctx, next)
	if err != nil {
		if ctx.Err() != nil {
			return s.busy(w, r)
		}
		return err
	}
	done, err := s.DB.SetUserPassword(ctx, &u.ID, u.ID, store.PasswordChange{Hash: hash})
	if err != nil {
		return err
	}
	// This session moves to the new epoch, under a new token; every other
	// one is still on the old epoch and ends at its next request.
	if err := s.Sessions.RenewToken(ctx); err != nil {
		return err
	}
	s.Sessions.Put(ctx, kit.SessionEpoch, done.SessionEpoch)
	msg := "Password changed. Your account was signed out everywhere else; you are still signed in here."
	if done.TokensKept > 0 {
		msg += " Your API tokens still work: revoke below any you no longer trust."
	}
	s.Flash(ctx, msg)
	http.Redirect(w, r, "/account", http.StatusSeeOther)
	return nil
}

// SetRubricExpanded stores the viewer's own choice between the compact
// rubric on the annotate page (expanded=0) and every criterion in full
// (expanded=1), then returns to back: the annotate page the toggle was on,
// or else the account page. back is held to a path on this site.
func (s *Handler) SetRubricExpanded(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := kit.UserFrom(ctx)
	on := r.PostFormValue("expanded") == "1"
	if err := s.DB.SetRubricExpanded(ctx, u.ID, on); err != nil {
		return err
	}
	back := "/account"
	if b := r.PostFormValue("back"); b != "" {
		back = safeNext(b)
	} else if on {
		s.Flash(ctx, "The annotate page now shows every rubric criterion in full.")
	} else {
		s.Flash(ctx, "The annotate page now shows a compact rubric: a criterion opens when you reach it.")
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

type apiUser struct {
	ID    int64  `json:"id"`
	Email string `json:"email"`
	Name  string `json:"name"`
	Role  string `json:"role"`
}

// APIMe is GET /api/v1/me: the account the token stands for.
func (s *Handler) APIMe(r *http.Request, u *attune.User) (int, any, error) {
	return http.StatusOK, apiUser{u.ID, u.Email, u.Name, string(u.Role)}, nil
}
