package projects

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/web/kit"
	webhookview "github.com/attune/attune/web/views/webhook"
)

// The Webhooks page and its forms are for the project's leads (and
// admins): ProjectAccess with manage gives an annotator of the project 403
// and anyone else 404 (routes in web/routes.go). A webhook's secret is
// shown in the answer to the form that made it, never put in the session,
// a redirect or a log, and never shown again.

// webhookDeliveriesShown bounds the deliveries the page lists per webhook.
const webhookDeliveriesShown = 20

func webhooksPath(projectID int64) string { return fmt.Sprintf("/projects/%d/webhooks", projectID) }

// webhookEventHelp says what each event announces, for the form.
var webhookEventHelp = map[attune.WebhookEvent]string{
	attune.EventImportFinished:   "items or labels were imported",
	attune.EventRunFinished:      "a judge run ended (completed or cancelled)",
	attune.EventRunPaused:        "a judge run paused (by a person, over its budget, or for an error)",
	attune.EventFullOverlap:      "every item has its k labels",
	attune.EventGoldChanged:      "gold was adjudicated or set by the consensus rule",
	attune.EventCalibrationAlert: "an annotator began to drift, or fell below the pass mark, on the calibration items",
}

// WebhooksPage lists the project's webhooks with their latest deliveries,
// and the form that adds one.
func (s *Handler) WebhooksPage(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	page, err := s.webhooksView(r, p)
	if err != nil {
		return err
	}
	s.Render(w, r, http.StatusOK, webhookview.View(page))
	return nil
}

func (s *Handler) webhooksView(r *http.Request, p *attune.Project) (webhookview.Page, error) {
	ctx := r.Context()
	page := webhookview.Page{
		Chrome:      s.Chrome(r, "Webhooks · "+p.Name, "home"),
		ProjectName: p.Name,
		Project:     templ.SafeURL(kit.ProjectPath(p.ID)),
		Action:      templ.SafeURL(webhooksPath(p.ID)),
		Form:        webhookview.Form{Events: map[string]bool{}},
	}
	for _, e := range attune.WebhookEvents {
		page.Events = append(page.Events, webhookview.Event{Name: string(e), Help: webhookEventHelp[e]})
	}
	hooks, err := s.DB.ListWebhooks(ctx, p.ID)
	if err != nil {
		return page, err
	}
	for _, h := range hooks {
		base := fmt.Sprintf("%s/%d", webhooksPath(p.ID), h.ID)
		v := webhookview.Hook{ID: h.ID, URL: h.URL, Enabled: h.Enabled,
			Toggle: templ.SafeURL(base + "/enabled"), Delete: templ.SafeURL(base + "/delete")}
		for _, e := range h.Events {
			v.Events = append(v.Events, string(e))
		}
		ds, err := s.DB.ListWebhookDeliveries(ctx, p.ID, h.ID, webhookDeliveriesShown)
		if err != nil {
			return page, err
		}
		for _, d := range ds {
			dv := webhookview.Delivery{ID: d.UUID, Event: string(d.Event), Created: kit.ShortTime(d.CreatedAt), State: d.State}
			for _, a := range d.Attempts {
				status := "no answer"
				if a.Status != 0 {
					status = strconv.Itoa(a.Status)
				}
				dv.Attempts = append(dv.Attempts, webhookview.Attempt{N: a.Attempt, At: kit.ShortTime(a.StartedAt),
					Latency: fmt.Sprintf("%d ms", a.Latency.Milliseconds()), Status: status, Error: a.Error, Response: a.Response})
			}
			v.Deliveries = append(v.Deliveries, dv)
		}
		page.Hooks = append(page.Hooks, v)
	}
	return page, nil
}

// CreateWebhook adds a webhook and shows its secret in this response only.
func (s *Handler) CreateWebhook(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
	if err := r.ParseForm(); err != nil {
		return attune.Invalid("form", "The form could not be read.")
	}
	rawURL := strings.TrimSpace(r.PostFormValue("url"))
	var events []attune.WebhookEvent
	chosen := map[string]bool{}
	for _, e := range r.PostForm["event"] {
		events = append(events, attune.WebhookEvent(e))
		chosen[e] = true
	}
	hook, secret, err := s.DB.CreateWebhook(ctx, &kit.UserFrom(ctx).ID, s.judgePolicy, p.ID, rawURL, events)
	var v *attune.ValidationError
	if errors.As(err, &v) {
		page, err := s.webhooksView(r, p)
		if err != nil {
			return err
		}
		page.Form = webhookview.Form{URL: rawURL, Events: chosen, Errors: v.Fields}
		s.Render(w, r, http.StatusUnprocessableEntity, webhookview.View(page))
		return nil
	}
	if err != nil {
		return err
	}
	page, err := s.webhooksView(r, p)
	if err != nil {
		return err
	}
	page.Created = &webhookview.Created{URL: hook.URL, Secret: secret}
	s.Render(w, r, http.StatusOK, webhookview.View(page))
	return nil
}

// SetWebhookEnabled turns a webhook off or on.
func (s *Handler) SetWebhookEnabled(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	id, err := kit.PathInt(r, "hook")
	if err != nil {
		return err
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<10)
	enabled := r.PostFormValue("enabled") == "true"
	if err := s.DB.SetWebhookEnabled(ctx, p.ID, id, enabled); err != nil {
		return err
	}
	msg := "Webhook turned off: it is told of nothing, and deliveries waiting are not sent."
	if enabled {
		msg = "Webhook turned on."
	}
	s.Flash(ctx, msg)
	http.Redirect(w, r, webhooksPath(p.ID), http.StatusSeeOther)
	return nil
}

// DeleteWebhook deletes a webhook with its deliveries.
func (s *Handler) DeleteWebhook(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	id, err := kit.PathInt(r, "hook")
	if err != nil {
		return err
	}
	if err := s.DB.DeleteWebhook(ctx, p.ID, id); err != nil {
		return err
	}
	s.Flash(ctx, "Webhook deleted.")
	http.Redirect(w, r, webhooksPath(p.ID), http.StatusSeeOther)
	return nil
}
