// Package webhook renders a project's Webhooks page, where its leads add a
// URL to tell of the project's events, turn one off or on, delete it, and
// read what each delivery's attempts got back. The signing secret appears
// once, on the answer to the form that made the webhook, and never again.
//
// Everything a lead or a receiver wrote is written as text, never as
// markup.
package webhook

import (
	"github.com/a-h/templ"

	"github.com/attune/attune/web/views/layout"
)

// Page is the Webhooks page of one project.
type Page struct {
	layout.Chrome
	ProjectName string
	Project     templ.SafeURL // the project page
	Action      templ.SafeURL // where the new-webhook form posts

	// Created is the webhook just made, with its secret; nil on every
	// other view of the page.
	Created *Created
	Form    Form
	Hooks   []Hook
	// Events are the events a webhook may ask for, for the form.
	Events []Event
}

// Created is a webhook just made and the secret that signs its deliveries.
type Created struct {
	URL    string
	Secret string
}

// Form is the new-webhook form as sent, with its errors by field ("url",
// "events").
type Form struct {
	URL    string
	Events map[string]bool
	Errors map[string]string
}

// Event is one event a webhook may ask for.
type Event struct {
	Name, Help string
}

// Hook is one webhook of the project with its latest deliveries.
type Hook struct {
	ID         int64
	URL        string
	Events     []string
	Enabled    bool
	Toggle     templ.SafeURL // posts enabled=true|false
	Delete     templ.SafeURL
	Deliveries []Delivery
}

// Delivery is one event sent (or being sent) to a webhook.
type Delivery struct {
	ID       string // the delivery id the receiver sees
	Event    string
	Created  string
	State    string // queued, delivered, failed
	Attempts []Attempt
}

// Attempt is one try at sending a delivery.
type Attempt struct {
	N        int
	At       string
	Latency  string
	Status   string // the receiver's HTTP status, or "—"
	Error    string
	Response string // the start of the receiver's answer
}
