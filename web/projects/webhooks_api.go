package projects

import (
	"net/http"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/web/kit"
)

// The project's webhooks for a lead's token: the Webhooks page's list,
// create (its secret shown in that response only), turn on or off,
// delete, and deliveries, through the same store calls and rules.

type apiWebhook struct {
	ID      int64    `json:"id"`
	URL     string   `json:"url"`
	Events  []string `json:"events"`
	Enabled bool     `json:"enabled"`
	// Secret signs the deliveries (HMAC-SHA256); it is sent once, in the
	// answer that created the webhook.
	Secret string `json:"secret,omitempty"`
}

func apiWebhookOf(h attune.Webhook) apiWebhook {
	out := apiWebhook{ID: h.ID, URL: h.URL, Enabled: h.Enabled, Events: []string{}}
	for _, e := range h.Events {
		out.Events = append(out.Events, string(e))
	}
	return out
}

// apiFindWebhook is the webhook of the path, of the project of the path,
// for one of the project's leads.
func (s *Handler) apiFindWebhook(r *http.Request, u *attune.User) (*attune.Project, *attune.Webhook, error) {
	p, err := s.APILeadProject(r, u, "manage its webhooks")
	if err != nil {
		return nil, nil, err
	}
	id, err := kit.PathInt(r, "hook")
	if err != nil {
		return nil, nil, err
	}
	hooks, err := s.DB.ListWebhooks(r.Context(), p.ID)
	if err != nil {
		return nil, nil, err
	}
	for i := range hooks {
		if hooks[i].ID == id {
			return p, &hooks[i], nil
		}
	}
	return nil, nil, attune.NotFound("no such webhook in this project")
}

// APIWebhooks lists the project's webhooks.
func (s *Handler) APIWebhooks(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "manage its webhooks")
	if err != nil {
		return 0, nil, err
	}
	page, err := kit.ReadPage(r)
	if err != nil {
		return 0, nil, err
	}
	hooks, next, err := s.DB.WebhookPage(r.Context(), p.ID, page.Cursor, page.Limit)
	if err != nil {
		return 0, nil, err
	}
	return kit.ListPage("webhooks", hooks, next, apiWebhookOf)
}

// APICreateWebhook adds a webhook: {"url", "events"}, checked by
// attune.ValidateWebhook against the judges' host allow-list. 201 with
// the webhook and its secret, shown this once.
func (s *Handler) APICreateWebhook(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "manage its webhooks")
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		URL    string   `json:"url"`
		Events []string `json:"events"`
	}
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	events := make([]attune.WebhookEvent, len(body.Events))
	for i, e := range body.Events {
		events[i] = attune.WebhookEvent(e)
	}
	hook, secret, err := s.DB.CreateWebhook(r.Context(), &u.ID, s.judgePolicy, p.ID, body.URL, events)
	if err != nil {
		return 0, nil, err
	}
	out := apiWebhookOf(*hook)
	out.Secret = secret
	return http.StatusCreated, out, nil
}

// APIUpdateWebhook turns a webhook on or off: {"enabled": false}.
func (s *Handler) APIUpdateWebhook(r *http.Request, u *attune.User) (int, any, error) {
	p, hook, err := s.apiFindWebhook(r, u)
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		Enabled *bool `json:"enabled"`
	}
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	if body.Enabled == nil {
		return 0, nil, attune.Invalid("enabled", "say whether the webhook is on: true or false")
	}
	if err := s.DB.SetWebhookEnabled(r.Context(), p.ID, hook.ID, *body.Enabled); err != nil {
		return 0, nil, err
	}
	hook.Enabled = *body.Enabled
	return http.StatusOK, apiWebhookOf(*hook), nil
}

// APIDeleteWebhook deletes a webhook with its deliveries.
func (s *Handler) APIDeleteWebhook(r *http.Request, u *attune.User) (int, any, error) {
	p, hook, err := s.apiFindWebhook(r, u)
	if err != nil {
		return 0, nil, err
	}
	if err := s.DB.DeleteWebhook(r.Context(), p.ID, hook.ID); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

type apiWebhookAttempt struct {
	Attempt   int       `json:"attempt"`
	StartedAt time.Time `json:"started_at"`
	LatencyMS int64     `json:"latency_ms"`
	Status    int       `json:"status"` // 0 when no HTTP answer came
	Error     string    `json:"error"`
	Response  string    `json:"response"`
}

type apiWebhookDelivery struct {
	ID        string              `json:"id"` // the delivery's id, sent with it
	Event     string              `json:"event"`
	CreatedAt time.Time           `json:"created_at"`
	State     string              `json:"state"`
	Attempts  []apiWebhookAttempt `json:"attempts"`
}

// APIWebhookDeliveries lists a webhook's latest deliveries, newest first,
// with every attempt: what the Webhooks page shows.
func (s *Handler) APIWebhookDeliveries(r *http.Request, u *attune.User) (int, any, error) {
	p, hook, err := s.apiFindWebhook(r, u)
	if err != nil {
		return 0, nil, err
	}
	page, err := kit.ReadPage(r)
	if err != nil {
		return 0, nil, err
	}
	ds, next, err := s.DB.WebhookDeliveryPage(r.Context(), p.ID, hook.ID, page.Cursor, page.Limit)
	if err != nil {
		return 0, nil, err
	}
	out := make([]apiWebhookDelivery, 0, len(ds))
	for _, d := range ds {
		dv := apiWebhookDelivery{ID: d.UUID, Event: string(d.Event), CreatedAt: d.CreatedAt.UTC(), State: d.State, Attempts: []apiWebhookAttempt{}}
		for _, a := range d.Attempts {
			dv.Attempts = append(dv.Attempts, apiWebhookAttempt{a.Attempt, a.StartedAt.UTC(), a.Latency.Milliseconds(), a.Status, a.Error, a.Response})
		}
		out = append(out, dv)
	}
	return http.StatusOK, map[string]any{"deliveries": out, "next_cursor": kit.NextCursor(next)}, nil
}
