package kit

import (
	"github.com/attune/attune/internal/attune"
	flagview "github.com/attune/attune/web/views/flag"
)

// FlagLabels name the reasons an item can be flagged, in attune.Flags
// order, as the workspace offers them and the Flags page filters by them.
var FlagLabels = map[string]string{
	"broken":      "Broken (garbled, cut off, empty)",
	"off-topic":   "Off-topic (not a supportive dialogue)",
	"distressing": "Distressing to read",
	"other":       "Something else (say what in the note)",
}

// FlagNames are the short names of the flag reasons, for counts and
// lists; the filter offers the longer descriptions of FlagLabels.
var FlagNames = map[string]string{"broken": "Broken", "off-topic": "Off-topic", "distressing": "Distressing", "other": "Other"}

// FlagCounts lists the open flags by reason in attune.Flags order, for the
// Flags page and the project page's summary.
func FlagCounts(c attune.FlagCounts) flagview.Counts {
	out := flagview.Counts{Open: c.Open, Resolved: c.Resolved, Pulled: c.Pulled}
	for _, f := range attune.Flags {
		out.ByReason = append(out.ByReason, flagview.ReasonCount{Reason: f, Label: FlagNames[f], Open: c.OpenByReason[f]})
	}
	return out
}
