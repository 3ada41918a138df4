// Package webhook sends a project's webhook deliveries: each one a signed
// JSON POST, worked as a job of the queue (retried with exponential
// backoff, a bounded number of times, each attempt under a timeout and
// recorded), over the egress dialer so a delivery reaches only hosts the
// admin allows.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/riverqueue/river"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/egress"
	"github.com/attune/attune/internal/store"
)

// Headers of every delivery.
const (
	// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256>"
	// (see Sign).
	SignatureHeader = "Attune-Signature"
	EventHeader     = "Attune-Event"
	DeliveryHeader  = "Attune-Delivery"
)

// Sign returns the signature header's value for body sent at t: the
// HMAC-SHA256, keyed with the webhook's secret, of the decimal Unix time,
// a dot, and the body exactly as sent.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Store is what the sender needs of the database.
type Store interface {
	FindOutgoingDelivery(ctx context.Context, id int64) (*store.OutgoingDelivery, error)
	RecordWebhookAttempt(ctx context.Context, a store.WebhookAttempt, state string) error
}

// Options tune a Sender; the zero value is the production setting.
type Options struct {
	// Timeout bounds one attempt, from connecting to the answer's end
	// (default 10s).
	Timeout time.Duration
	// BaseBackoff and MaxBackoff bound the wait before the next attempt:
	// BaseBackoff doubled after each failure, at most MaxBackoff, with up
	// to a tenth added at random (defaults 10s and 20m).
	BaseBackoff, MaxBackoff time.Duration
	Logger                  *slog.Logger
	// Now stamps the signature (default time.Now).
	Now func() time.Time
}

// Sender is the worker of webhook delivery jobs.
type Sender struct {
	river.WorkerDefaults[store.WebhookDeliveryArgs]
	db     Store
	policy attune.JudgePolicy
	opts   Options
	hc     *http.Client
}

// NewSender returns a Sender whose deliveries go only where policy allows
// (the judges' host allow-list, ATTUNE_JUDGE_HOSTS).
func NewSender(db Store, policy attune.JudgePolicy, opts Options) *Sender {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = 10 * time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 20 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	hc := &http.Client{
		Transport: egress.Transport(policy),
		// A redirect could lead anywhere the receiver likes: it is not
		// followed, and counts as a failed attempt.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Sender{db: db, policy: policy, opts: opts, hc: hc}
}

// Register adds the sender to a job queue's workers and returns the queue
// it works with its settings.
func (s *Sender) Register(w *river.Workers) (string, river.QueueConfig) {
	river.AddWorker(w, river.Worker[store.WebhookDeliveryArgs](s))
	return store.WebhookQueue, river.QueueConfig{MaxWorkers: 8}
}

// Timeout bounds one attempt's job, a little beyond the HTTP call's own.
func (s *Sender) Timeout(*river.Job[store.WebhookDeliveryArgs]) time.Duration {
	return s.opts.Timeout + 5*time.Second
}

// NextRetry is the exponential backoff after a failed attempt.
func (s *Sender) NextRetry(job *river.Job[store.WebhookDeliveryArgs]) time.Time {
	d := s.opts.BaseBackoff
	for i := 1; i < job.Attempt && d < s.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, s.opts.MaxBackoff)
	d += time.Duration(rand.Int64N(int64(d)/10 + 1))
	return time.Now().Add(d)
}

// Work makes one attempt at the delivery and records it. A failure that
// another attempt may mend (no answer, a status other than 2xx) returns an
// error, and the queue tries again until the delivery's attempts run out;
// a refusal of the host policy or a webhook turned off ends it at once.
func (s *Sender) Work(ctx context.Context, job *river.Job[store.WebhookDeliveryArgs]) error {
	d, err := s.db.FindOutgoingDelivery(ctx, job.Args.DeliveryID)
	if errors.Is(err, attune.ErrNotFound) {
		return nil // its webhook was deleted
	}
	if err != nil {
		return err
	}
	if d.State != "queued" {
		return nil // recorded as done by an earlier attempt whose job outlived it
	}
	a := store.WebhookAttempt{DeliveryID: d.ID, Attempt: job.Attempt, StartedAt: time.Now()}
	final := job.Attempt >= job.MaxAttempts
	switch {
	case !d.Enabled:
		a.Error = "the webhook is turned off: not sent"
		final = true
	case s.policy.CheckWebhookURL(d.URL) != "":
		a.Error = "not sent: " + s.policy.CheckWebhookURL(d.URL)
		final = true
	default:
		a.Status, a.Response, err = s.post(ctx, d)
		a.Latency = time.Since(a.StartedAt)
		switch {
		case errors.Is(err, egress.ErrRefused):
			a.Error = err.Error()
			final = true
		case err != nil:
			a.Error = err.Error()
		case a.Status < 200 || a.Status > 299:
			a.Error = "the receiver answered " + strconv.Itoa(a.Status)
			if a.Status >= 300 && a.Status < 400 {
				a.Error += " (redirects are not followed)"
			}
		}
	}
	state := "queued"
	switch {
	case a.Error == "":
		state = "delivered"
	case final:
		state = "failed"
	}
	if err := s.db.RecordWebhookAttempt(ctx, a, state); err != nil {
		return err
	}
	switch {
	case a.Error == "":
		return nil
	case final:
		s.opts.Logger.Warn("webhook delivery failed", "delivery", d.UUID, "event", d.Event, "attempt", a.Attempt, "error", a.Error)
		return river.JobCancel(errors.New(a.Error))
	}
	return errors.New(a.Error)
}

// post sends the delivery once and returns the status and the start of
// the answer.
func (s *Sender) post(ctx context.Context, d *store.OutgoingDelivery) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Body))
	if err != nil {
		return 0, "", fmt.Errorf("the URL cannot be requested: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "attune-webhook")
	req.Header.Set(SignatureHeader, Sign(d.Secret, s.opts.Now(), d.Body))
	req.Header.Set(EventHeader, string(d.Event))
	req.Header.Set(DeliveryHeader, d.UUID)
	resp, err := s.hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, store.MaxWebhookResponse))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16)) // lets the connection be reused
	return resp.StatusCode, string(head), nil
}
