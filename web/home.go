package web

import (
	"net/http"

	"github.com/attune/attune/web/views/home"
)

func (s *Server) home(w http.ResponseWriter, r *http.Request) error {
	u := userFrom(r.Context())
	ps, err := s.db.ListProjectsForUser(r.Context(), u)
	if err != nil {
		return err
	}
	page := home.Page{Chrome: s.chrome(r, "Projects", "home"), Role: string(u.Role)}
	for _, p := range ps {
		page.Projects = append(page.Projects, home.Project{
			ID: p.ID, Name: p.Name, Rubric: p.RubricRef, Status: string(p.Status), Items: p.Items, Complete: p.Complete, Overlap: p.Overlap, YourRole: p.MemberRole,
		})
	}
	s.render(w, r, http.StatusOK, home.View(page))
	return nil
}
