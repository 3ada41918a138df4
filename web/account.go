package web

import (
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/attune/attune/web/views/account"
)

// maxTokenName bounds a token's name, which only tells tokens apart.
const maxTokenName = 100

func (s *Server) accountPage(w http.ResponseWriter, r *http.Request) error {
	page, err := s.accountView(r)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, account.View(page))
	return nil
}

// accountView builds the account page with the viewer's tokens.
func (s *Server) accountView(r *http.Request) (account.Page, error) {
	u := userFrom(r.Context())
	page := account.Page{Chrome: s.chrome(r, "Account", "account"), Email: u.Email, Name: u.Name, Role: string(u.Role)}
	tokens, err := s.db.ListAPITokens(r.Context(), u.ID)
	if err != nil {
		return page, err
	}
	for _, t := range tokens {
		row := account.Token{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Created: formatTime(t.CreatedAt), LastUsed: "never"}
		if t.LastUsedAt != nil {
			row.LastUsed = formatTime(*t.LastUsedAt)
		}
		if t.RevokedAt != nil {
			row.Revoked = formatTime(*t.RevokedAt)
		}
		page.Tokens = append(page.Tokens, row)
	}
	return page, nil
}

// createToken makes a token and shows it in this response only: it is
// never put in the session or a redirect, so the secret exists nowhere but
// in the page the user is looking at (served with Cache-Control: no-store).
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := userFrom(ctx)
	name := strings.TrimSpace(r.PostFormValue("name"))
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
		page.Form = account.TokenForm{Name: name}
		page.Errors = map[string]string{"name": msg}
		s.render(w, r, http.StatusUnprocessableEntity, account.View(page))
		return nil
	}
	secret, _, err := s.db.CreateAPIToken(ctx, &u.ID, u.ID, name)
	if err != nil {
		return err
	}
	page, err := s.accountView(r)
	if err != nil {
		return err
	}
	page.NewToken = &account.NewToken{Name: name, Secret: secret}
	s.render(w, r, http.StatusOK, account.View(page))
	return nil
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := userFrom(ctx)
	id, err := pathID(r)
	if err != nil {
		return err
	}
	// The store matches the token on its owner too: someone else's token
	// is not found.
	if err := s.db.RevokeAPIToken(ctx, &u.ID, u.ID, id); err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionFlash, "Token revoked: it no longer works.")
	http.Redirect(w, r, "/account", http.StatusSeeOther)
	return nil
}

// formatTime shows a moment to the minute, in UTC, as every page does.
func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }
