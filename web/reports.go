package web

import "net/http"

// reportRoutes lists the agreement report pages and the labels import.
func (s *Server) reportRoutes(app *http.ServeMux) {
}
