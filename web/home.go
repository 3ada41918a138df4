package web

import (
	"net/http"

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
		})
	}
	s.Render(w, r, http.StatusOK, home.View(page))
	return nil
}
