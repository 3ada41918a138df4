package web

import "net/http"

// exportRoutes lists the CSV and JSONL downloads.
func (s *Server) exportRoutes(app *http.ServeMux) {
}
