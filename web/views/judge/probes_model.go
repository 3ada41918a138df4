package judge

import (
	"github.com/a-h/templ"

	"github.com/attune/attune/web/views/layout"
)

// CertificationPage is a judge's certification on a project: per prompt
// version, the alternative annotator test beside the robustness probes of
// its latest completed probe, and the form that starts a probe.
type CertificationPage struct {
	layout.Chrome
	JudgeName   string
	ProjectName string
	ProjectURL  templ.SafeURL
	PromptsURL  templ.SafeURL
	// StartURL takes the start form (k, prompt version, budget).
	StartURL templ.SafeURL
	Form     ProbeForm
	// Thresholds says the project's thresholds in words.
	Thresholds string
	Versions   []CertifiedVersion
	Probes     []ProbeRow
}

// ProbeForm is the start form as sent, with a message per bad field.
type ProbeForm struct {
	K, Prompt, Budget string
	Errors            map[string]string
}

// CertifiedVersion is one prompt version with a completed probe.
type CertifiedVersion struct {
	Version int
	Probe   int64 // the probe's run id
	Items   int
	Rows    []CertifiedRow
	// Unstable names the probes that failed; empty when none did.
	Unstable string
}

// CertifiedRow is one rubric item: the alt-test's word, the certification
// (the word joined with the probes), and each probe's figure and verdict.
type CertifiedRow struct {
	Key           string
	Alt           string
	Certification string
	Class         string // passed, unstable, failed or unknown
	Probes        []ProbeCell
}

// ProbeCell is one probe of one rubric item.
type ProbeCell struct {
	Name    string // "retest", "rename"…
	Figure  string // "0 of 20 changed, κ 1.00"
	Verdict string
	Class   string // stable, unstable or unknown
}

// ProbeRow is one probe run in the list.
type ProbeRow struct {
	ID      int64
	URL     templ.SafeURL
	Version int
	K       int
	Status  string
	Reason  string
	Created string
}
