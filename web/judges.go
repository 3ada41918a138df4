package web

import "net/http"

// judgeRoutes lists the judge pages: judges, runs and their answers.
func (s *Server) judgeRoutes(app *http.ServeMux) {
}
