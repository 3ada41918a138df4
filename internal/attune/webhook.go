package attune

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// WebhookEvent names what a webhook may be told of.
type WebhookEvent string

// The events a project announces.
const (
	// EventImportFinished: items or labels were imported into the project.
	EventImportFinished WebhookEvent = "import.finished"
	// EventRunFinished: a judge run ended (done, failed or cancelled).
	EventRunFinished WebhookEvent = "run.finished"
	// EventRunPaused: a judge run paused (by a person or over its budget).
	EventRunPaused WebhookEvent = "run.paused"
	// EventFullOverlap: every item of the project has its k labels.
	EventFullOverlap WebhookEvent = "project.full_overlap"
	// EventGoldChanged: an item's gold was set or changed.
	EventGoldChanged WebhookEvent = "gold.changed"
	// EventCalibrationAlert: an annotator's calibration answers began to
	// call for a look (drift, or accuracy below the pass mark).
	EventCalibrationAlert WebhookEvent = "calibration.alert"
)

// WebhookEvents lists every event, in the order pages show them.
var WebhookEvents = []WebhookEvent{EventImportFinished, EventRunFinished, EventRunPaused, EventFullOverlap, EventGoldChanged, EventCalibrationAlert}

// MaxWebhookURL bounds a webhook's URL, in bytes.
const MaxWebhookURL = 2000

// Webhook is a URL a project tells of its events. Its secret is not part
// of it: the store hands it out once, when the webhook is made, and to the
// sender that signs.
type Webhook struct {
	ID        int64
	ProjectID int64
	URL       string
	Events    []WebhookEvent
	Enabled   bool
}

// ValidateWebhook checks a webhook's URL and events before it is stored
// (the store calls it inside its transaction): the URL must be http(s),
// carry no credentials, and reach a host the policy allows, the same
// allow-list as judges' base URLs (ATTUNE_JUDGE_HOSTS). The sender checks
// the policy again when it connects.
func ValidateWebhook(p JudgePolicy, rawURL string, events []WebhookEvent) error {
	errs := map[string]string{}
	u, err := url.Parse(rawURL)
	switch {
	case len(rawURL) > MaxWebhookURL:
		errs["url"] = fmt.Sprintf("Keep the URL to %d characters or fewer.", MaxWebhookURL)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || !utf8.ValidString(rawURL):
		errs["url"] = "Enter an http or https URL, like https://hooks.example.org/attune."
	case u.User != nil:
		errs["url"] = "Remove the credentials from the URL: the delivery's signature proves it comes from attune."
	default:
		if msg := p.CheckWebhookURL(rawURL); msg != "" {
			errs["url"] = msg
		}
	}
	if len(events) == 0 {
		errs["events"] = "Choose at least one event."
	}
	for _, e := range events {
		if !slices.Contains(WebhookEvents, e) {
			errs["events"] = fmt.Sprintf("%q is not an event attune announces.", string(e))
		}
	}
	if len(errs) > 0 {
		return &ValidationError{Fields: errs}
	}
	return nil
}

// CheckWebhookURL returns a message fit to show when the policy does not
// allow deliveries to raw's host, or "" when it does. The rule is the
// judges' one (see CheckBaseURL); an empty URL is never allowed.
func (p JudgePolicy) CheckWebhookURL(raw string) string {
	if strings.TrimSpace(raw) == "" {
		return "Enter the URL to notify."
	}
	return p.checkHost(raw, "Webhooks")
}
