package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/attune/attune/internal/attune"
)

// WebhookQueue is the job queue webhook deliveries wait in.
const WebhookQueue = "webhook"

// WebhookMaxAttempts is how many times a delivery is tried before it is
// given up as failed; with the sender's backoff the last try comes about
// an hour after the first.
const WebhookMaxAttempts = 8

// WebhookDeliveryArgs is the job that sends one delivery.
type WebhookDeliveryArgs struct {
	DeliveryID int64 `json:"delivery_id"`
}

// Kind names the job kind in the queue.
func (WebhookDeliveryArgs) Kind() string { return "webhook_delivery" }

// newWebhookSecret returns a fresh signing secret: 32 random bytes, hex.
func newWebhookSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return "whsec_" + hex.EncodeToString(b)
}

// CreateWebhook makes a webhook for the project after checking its URL
// and events against the host policy (attune.ValidateWebhook), and returns
// it with its signing secret. The secret is handed out here only: no other
// method shows it to a caller that would display it.
func (db *DB) CreateWebhook(ctx context.Context, actorID *int64, policy attune.JudgePolicy, projectID int64, rawURL string, events []attune.WebhookEvent) (*attune.Webhook, string, error) {
	if err := attune.ValidateWebhook(policy, rawURL, events); err != nil {
		return nil, "", err
	}
	secret := newWebhookSecret()
	w := &attune.Webhook{ProjectID: projectID, URL: rawURL, Events: events, Enabled: true}
	names := make([]string, len(events))
	for i, e := range events {
		names[i] = string(e)
	}
	err := db.pool.QueryRow(ctx, `
		INSERT INTO webhooks (project_id, url, events, secret, created_by)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`,
		projectID, rawURL, names, secret, actorID).Scan(&w.ID)
	if err != nil {
		return nil, "", mapErr(err, "create webhook", "")
	}
	return w, secret, nil
}

// ListWebhooks returns the project's webhooks, oldest first.
func (db *DB) ListWebhooks(ctx context.Context, projectID int64) ([]attune.Webhook, error) {
	return db.listWebhooks(ctx, projectID, nil, nil)
}

// WebhookPage is one page of the project's webhooks, by id: at most limit
// (1 to MaxSearchPage) after the page whose cursor is cursor ("" for the
// first), and the next page's cursor ("" on the last), by keyset.
func (db *DB) WebhookPage(ctx context.Context, projectID int64, cursor string, limit int) ([]attune.Webhook, string, error) {
	return keysetList(cursor, "webhooks", 0, limit,
		func(after []any, n int) ([]attune.Webhook, error) {
			return db.listWebhooks(ctx, projectID, after[0], &n)
		},
		func(w attune.Webhook) (int64, []string) { return w.ID, nil })
}

// listWebhooks lists the project's webhooks by id, after the id afterID
// (nil: from the first), at most limit (nil: all).
func (db *DB) listWebhooks(ctx context.Context, projectID int64, afterID any, limit *int) ([]attune.Webhook, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT id, project_id, url, events, enabled FROM webhooks
		WHERE project_id = $1 AND ($2::bigint IS NULL OR id > $2)
		ORDER BY id LIMIT $3`, projectID, afterID, limit)
	if err != nil {
		return nil, mapErr(err, "list webhooks", "")
	}
	ws, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (attune.Webhook, error) {
		var w attune.Webhook
		var events []string
		if err := r.Scan(&w.ID, &w.ProjectID, &w.URL, &events, &w.Enabled); err != nil {
			return w, err
		}
		for _, e := range events {
			w.Events = append(w.Events, attune.WebhookEvent(e))
		}
		return w, nil
	})
	return ws, mapErr(err, "list webhooks", "")
}

// SetWebhookEnabled turns the project's webhook on or off; an off webhook
// is told of nothing, and deliveries already queued for it are not sent.
func (db *DB) SetWebhookEnabled(ctx context.Context, projectID, id int64, enabled bool) error {
	tag, err := db.pool.Exec(ctx, `UPDATE webhooks SET enabled = $3 WHERE project_id = $1 AND id = $2`, projectID, id, enabled)
	if err == nil && tag.RowsAffected() == 0 {
		err = pgx.ErrNoRows
	}
	return mapErr(err, "set webhook enabled", "")
}

// DeleteWebhook deletes the project's webhook with its deliveries.
func (db *DB) DeleteWebhook(ctx context.Context, projectID, id int64) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM webhooks WHERE project_id = $1 AND id = $2`, projectID, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = pgx.ErrNoRows
	}
	return mapErr(err, "delete webhook", "")
}

// WebhookPayload is the JSON body of every delivery.
type WebhookPayload struct {
	// ID is the delivery's own id: a receiver that sees it twice (a retry
	// after an answer that was lost) has seen the same event.
	ID         string              `json:"id"`
	Event      attune.WebhookEvent `json:"event"`
	Project    WebhookProject      `json:"project"`
	OccurredAt time.Time           `json:"occurred_at"`
	Data       any                 `json:"data"`
}

// WebhookProject names the project in a payload.
type WebhookProject struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// announce queues a delivery of the event to each enabled webhook of the
// project that asked for it, inside tx: when tx rolls back nothing is
// announced. data is the event's own part of the payload.
func (db *DB) announce(ctx context.Context, tx pgx.Tx, projectID int64, event attune.WebhookEvent, data any) error {
	rows, err := tx.Query(ctx, `
		SELECT w.id, p.name FROM webhooks w JOIN projects p ON p.id = w.project_id
		WHERE w.project_id = $1 AND w.enabled AND $2 = ANY (w.events)`, projectID, string(event))
	if err != nil {
		return fmt.Errorf("announce %s: %w", event, err)
	}
	type target struct {
		id      int64
		project string
	}
	targets, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (target, error) {
		var t target
		return t, r.Scan(&t.id, &t.project)
	})
	if err != nil || len(targets) == 0 {
		return err
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	params := make([]river.InsertManyParams, 0, len(targets))
	for _, t := range targets {
		p := WebhookPayload{ID: newUUID(), Event: event, Project: WebhookProject{ID: projectID, Name: t.project}, OccurredAt: now, Data: data}
		body, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("announce %s: %w", event, err)
		}
		var id int64
		if err := tx.QueryRow(ctx, `
			INSERT INTO webhook_deliveries (webhook_id, uuid, event, body) VALUES ($1, $2, $3, $4) RETURNING id`,
			t.id, p.ID, string(event), body).Scan(&id); err != nil {
			return fmt.Errorf("announce %s: %w", event, err)
		}
		params = append(params, river.InsertManyParams{Args: WebhookDeliveryArgs{DeliveryID: id},
			InsertOpts: &river.InsertOpts{Queue: WebhookQueue, MaxAttempts: WebhookMaxAttempts}})
	}
	if _, err := db.jobs.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("announce %s: queue: %w", event, err)
	}
	return nil
}

// Announce queues the event for the project's webhooks in a transaction
// of its own, for a change that is already committed by other means (an
// import streamed over many transactions). Where the change has a
// transaction, the store announces inside it instead.
func (db *DB) Announce(ctx context.Context, projectID int64, event attune.WebhookEvent, data any) error {
	return mapErr(db.inTx(ctx, func(tx pgx.Tx) error {
		return db.announce(ctx, tx, projectID, event, data)
	}), "announce", "")
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// OutgoingDelivery is what the sender needs to send one delivery.
type OutgoingDelivery struct {
	ID      int64
	UUID    string
	Event   attune.WebhookEvent
	URL     string
	Secret  string
	Body    []byte
	Enabled bool   // the webhook is on
	State   string // queued, delivered or failed
}

// FindOutgoingDelivery returns the delivery with its webhook's URL and
// secret, for the sender alone (the secret must not reach a page or a log).
func (db *DB) FindOutgoingDelivery(ctx context.Context, id int64) (*OutgoingDelivery, error) {
	d := &OutgoingDelivery{ID: id}
	var event string
	err := db.pool.QueryRow(ctx, `
		SELECT d.uuid::text, d.event, w.url, w.secret, d.body::text, w.enabled, d.state
		FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
		WHERE d.id = $1`, id).Scan(&d.UUID, &event, &d.URL, &d.Secret, &d.Body, &d.Enabled, &d.State)
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("find webhook delivery %d", id), "")
	}
	d.Event = attune.WebhookEvent(event)
	return d, nil
}

// WebhookAttempt is one try at sending a delivery.
type WebhookAttempt struct {
	DeliveryID int64
	Attempt    int
	StartedAt  time.Time
	Latency    time.Duration
	Status     int    // 0 when no HTTP answer came
	Error      string // "" when the receiver took it
	Response   string // the start of the receiver's answer
}

// MaxWebhookResponse bounds the part of a receiver's answer kept.
const MaxWebhookResponse = 1024

// RecordWebhookAttempt keeps the attempt and moves the delivery to state
// (queued while more attempts follow, delivered or failed). Recording an
// attempt twice (a worker that died after recording) keeps the first.
func (db *DB) RecordWebhookAttempt(ctx context.Context, a WebhookAttempt, state string) error {
	var status *int
	if a.Status != 0 {
		status = &a.Status
	}
	return mapErr(db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO webhook_attempts (delivery_id, attempt, started_at, latency_ms, status, error, response)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
			a.DeliveryID, a.Attempt, a.StartedAt, a.Latency.Milliseconds(), status, a.Error, truncateUTF8(a.Response, MaxWebhookResponse)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET state = $2 WHERE id = $1`, a.DeliveryID, state)
		return err
	}), "record webhook attempt", "")
}

// truncateUTF8 cuts s to at most n bytes, not inside a character, and
// drops bytes PostgreSQL text cannot hold.
func truncateUTF8(s string, n int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}

// WebhookDelivery is one delivery as the webhooks page lists it, with its
// attempts, oldest first.
type WebhookDelivery struct {
	ID        int64
	UUID      string
	Event     attune.WebhookEvent
	CreatedAt time.Time
	State     string
	Attempts  []WebhookAttempt
}

// ListWebhookDeliveries returns the webhook's latest deliveries (at most
// limit), newest first, when the webhook belongs to the project.
func (db *DB) ListWebhookDeliveries(ctx context.Context, projectID, webhookID int64, limit int) ([]WebhookDelivery, error) {
	return db.listWebhookDeliveries(ctx, projectID, webhookID, nil, limit)
}

// WebhookDeliveryPage is one page of the webhook's deliveries, newest
// first: at most limit (1 to MaxSearchPage) after the page whose cursor
// is cursor ("" for the first), and the next page's cursor ("" on the
// last), by keyset on the delivery's id.
func (db *DB) WebhookDeliveryPage(ctx context.Context, projectID, webhookID int64, cursor string, limit int) ([]WebhookDelivery, string, error) {
	return keysetList(cursor, "deliveries", 0, limit,
		func(after []any, n int) ([]WebhookDelivery, error) {
			return db.listWebhookDeliveries(ctx, projectID, webhookID, after[0], n)
		},
		func(d WebhookDelivery) (int64, []string) { return d.ID, nil })
}

// listWebhookDeliveries lists the webhook's deliveries newest first, older
// than the delivery beforeID (nil: from the newest), at most limit.
func (db *DB) listWebhookDeliveries(ctx context.Context, projectID, webhookID int64, beforeID any, limit int) ([]WebhookDelivery, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT d.id, d.uuid::text, d.event, d.created_at, d.state,
		       coalesce(jsonb_agg(jsonb_build_object('attempt', a.attempt, 'started_at', a.started_at,
		           'latency_ms', a.latency_ms, 'status', coalesce(a.status, 0), 'error', a.error, 'response', a.response)
		           ORDER BY a.attempt) FILTER (WHERE a.attempt IS NOT NULL), '[]')
		FROM webhook_deliveries d
		JOIN webhooks w ON w.id = d.webhook_id AND w.project_id = $1
		LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
		WHERE d.webhook_id = $2 AND ($4::bigint IS NULL OR d.id < $4)
		GROUP BY d.id ORDER BY d.id DESC LIMIT $3`, projectID, webhookID, limit, beforeID)
	if err != nil {
		return nil, mapErr(err, "list webhook deliveries", "")
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookDelivery, error) {
		var d WebhookDelivery
		var event string
		var attempts []struct {
			Attempt   int       `json:"attempt"`
			StartedAt time.Time `json:"started_at"`
			LatencyMS int64     `json:"latency_ms"`
			Status    int       `json:"status"`
			Error     string    `json:"error"`
			Response  string    `json:"response"`
		}
		if err := r.Scan(&d.ID, &d.UUID, &event, &d.CreatedAt, &d.State, &attempts); err != nil {
			return d, err
		}
		d.Event = attune.WebhookEvent(event)
		for _, a := range attempts {
			d.Attempts = append(d.Attempts, WebhookAttempt{DeliveryID: d.ID, Attempt: a.Attempt, StartedAt: a.StartedAt,
				Latency: time.Duration(a.LatencyMS) * time.Millisecond, Status: a.Status, Error: a.Error, Response: a.Response})
		}
		return d, nil
	})
	return ds, mapErr(err, "list webhook deliveries", "")
}

// announceIfFullOverlap announces that the project reached full overlap
// when every item in its pool now has its k labels. The caller has just
// given items their k-th label, pending of them in ways the project's
// label-count histogram does not show yet (it is kept at commit): those
// are still counted short. A lock per project makes the checks of two
// transactions that complete the last items take turns, the second after
// the first's commit, so exactly one announces.
func (db *DB) announceIfFullOverlap(ctx context.Context, tx pgx.Tx, projectID int64, pending int) error {
	b := &pgx.Batch{}
	queueFullOverlap(b, projectID)
	br := tx.SendBatch(ctx, b)
	short, items, err := readFullOverlap(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return db.announceFullOverlap(ctx, tx, projectID, pending, short, items)
}

// queueFullOverlap adds to b the lock and the counts announceIfFullOverlap
// checks, for a caller that sends them with statements of its own (before
// them: the lock is to be held while waiting for nothing but the commit);
// readFullOverlap reads them, announceFullOverlap announces.
func queueFullOverlap(b *pgx.Batch, projectID int64) {
	b.Queue(`SELECT pg_advisory_xact_lock(hashtext('attune.full_overlap'), $1::int)`, projectID)
	b.Queue(overlapCountsSQL, projectID)
}

func readFullOverlap(br pgx.BatchResults) (short, items int, err error) {
	if _, err := br.Exec(); err != nil {
		return 0, 0, err
	}
	err = br.QueryRow().Scan(&short, &items)
	return short, items, err
}

func (db *DB) announceFullOverlap(ctx context.Context, tx pgx.Tx, projectID int64, pending, short, items int) error {
	if items == 0 || short != pending {
		return nil
	}
	return db.announce(ctx, tx, projectID, attune.EventFullOverlap, map[string]any{"items": items})
}

// overlapCountsSQL selects how many items in project $1's pool have fewer
// than k labels, and how many it has, from its label-count histogram (a
// few rows) as committed.
const overlapCountsSQL = `
	SELECT coalesce(sum(g.items) FILTER (WHERE g.done < p.overlap), 0), coalesce(sum(g.items), 0)
	FROM projects p LEFT JOIN project_progress g ON g.project_id = p.id AND NOT g.pulled
	WHERE p.id = $1`

// overlapCounts returns overlapCountsSQL's counts.
func overlapCounts(ctx context.Context, tx pgx.Tx, projectID int64) (short, items int, err error) {
	err = tx.QueryRow(ctx, overlapCountsSQL, projectID).Scan(&short, &items)
	return short, items, err
}
