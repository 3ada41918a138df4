package web

import "net/http"

// goldRoutes lists the adjudication queue and the gold set pages.
func (s *Server) goldRoutes(app *http.ServeMux) {
}
