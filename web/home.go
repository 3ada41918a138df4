package web

import (
	"net/http"

	"github.com/attune/attune/internal/attune"

	"github.com/attune/attune/web/kit"
	"github.com/attune/attune/web/views/home"
)

func (s *Server) home(w http.ResponseWriter, r *http.Request) error {
	u := kit.UserFrom(r.Context())
	ps, err := s.DB.ListProjectsForUser(r.Context(), u)
	if err != nil {
		return err
	}
	page := home.Page{Chrome: s.Chrome(r, "Projects", "home"), Role: string(u.Role)}
	for _, p := range ps {
		page.Projects = append(page.Projects, home.Project{
			ID: p.ID, Name: p.Name, Rubric: p.RubricRef, Status: string(p.Status), Items: p.Items, Complete: p.Complete, Overlap: p.Overlap, YourRole: p.MemberRole,
			SystemKey: systemKeyShown(p.SystemKey),
		})
	}
	s.Render(w, r, http.StatusOK, home.View(page))
	return nil
}

// systemKeyShown is the system key a project card names: none for the
// default, which every project has unless its lead chose another.
func systemKeyShown(key string) string {
	if key == attune.DefaultSystemKey {
		return ""
	}
	return key
}
