package web

import "net/http"

// annotateRoutes lists the annotator's workspace.
func (s *Server) annotateRoutes(app *http.ServeMux) {
}
