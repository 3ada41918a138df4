// Package reports serves a project's agreement reports and the figures'
// items, the labels brought in from elsewhere, where a judge parts from
// people, judge variants side by side on the frozen gold items, the
// systems view with its draws, and estimates.
package reports

import (
	"github.com/attune/attune/internal/experiment"
	"github.com/attune/attune/web/kit"
)

// Handler serves the reports' pages and API.
type Handler struct {
	*kit.Kit
	// experiments keeps the last experiment pages' results by their whole
	// input, for a page viewed again.
	experiments *experiment.Cache
}

// New returns the reports' handler over k, keeping experiment results in
// experiments.
func New(k *kit.Kit, experiments *experiment.Cache) *Handler {
	return &Handler{Kit: k, experiments: experiments}
}
