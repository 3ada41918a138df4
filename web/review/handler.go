// Package review is what a project's leads review and settle: the gold
// set and the adjudication of disagreements, the calibration set and its
// rules, the items browser, annotators' flags, and the exports.
package review

import (
	"github.com/attune/attune/internal/adjudication"
	"github.com/attune/attune/web/kit"
)

// Handler serves review's pages and API.
type Handler struct {
	*kit.Kit
	// adjudication applies the consensus rule and stores a lead's gold,
	// as the command line does.
	adjudication *adjudication.Flow
}

// New returns the review handler over k, storing gold through flow.
func New(k *kit.Kit, flow *adjudication.Flow) *Handler {
	return &Handler{Kit: k, adjudication: flow}
}
