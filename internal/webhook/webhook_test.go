package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/internal/webhook"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// received is one request the receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a real HTTP server that answers with the statuses given, in
// turn (200 once they run out), and hands every request to got.
type receiver struct {
	srv      *httptest.Server
	got      chan received
	mu       sync.Mutex
	statuses []int
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	rc := &receiver{got: make(chan received, 16), statuses: statuses}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		status := http.StatusOK
		if len(rc.statuses) > 0 {
			status, rc.statuses = rc.statuses[0], rc.statuses[1:]
		}
		rc.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, "answer "+strconv.Itoa(status))
		rc.got <- received{r.Header.Clone(), body}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// policy allows exactly the receiver's loopback address and port.
func (rc *receiver) policy() attune.JudgePolicy {
	ap := netip.MustParseAddrPort(rc.srv.Listener.Addr().String())
	return attune.JudgePolicy{Hosts: []attune.HostRule{{Prefix: netip.PrefixFrom(ap.Addr(), 32), Port: strconv.Itoa(int(ap.Port()))}}}
}

type fixture struct {
	db      *store.DB
	project int64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	var rv int64
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM rubric_versions ORDER BY id LIMIT 1`).Scan(&rv); err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "hooked", RubricVersionID: rv, Overlap: 2, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{db: db, project: p.ID}
}

// work starts a queue client that works webhook jobs with the sender, and
// returns a channel of the jobs it finished (completed, cancelled or
// failed for good).
func (f *fixture) work(t *testing.T, s *webhook.Sender) <-chan *river.Event {
	t.Helper()
	workers := river.NewWorkers()
	queue, cfg := s.Register(workers)
	client, err := river.NewClient(riverpgxv5.New(f.db.Pool()), &river.Config{
		Queues: map[string]river.QueueConfig{queue: cfg}, Workers: workers, FetchCooldown: 5 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond, TestOnly: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	events, cancel := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobCancelled, river.EventKindJobFailed)
	ctx := context.Background()
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		client.Stop(ctx)
	})
	return events
}

// awaitFinal waits for a job to end for good (completed or cancelled);
// a failure that will be retried is passed over.
func awaitFinal(t *testing.T, events <-chan *river.Event) *river.Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Kind == river.EventKindJobFailed && e.Job.State != "discarded" {
				continue
			}
			return e
		case <-timeout:
			t.Fatal("no delivery job ended within 30s")
			return nil
		}
	}
}

func fastSender(f *fixture, p attune.JudgePolicy) *webhook.Sender {
	return webhook.NewSender(f.db, p, webhook.Options{BaseBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Timeout: 5 * time.Second})
}

// verify checks a delivery as a receiver following docs/webhooks.md does.
func verify(t *testing.T, secret string, r received) {
	t.Helper()
	var ts, sig string
	for _, part := range strings.Split(r.header.Get(webhook.SignatureHeader), ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(r.body)
	want := hex.EncodeToString(m.Sum(nil))
	if ts == "" || !hmac.Equal([]byte(sig), []byte(want)) {
		t.Fatalf("signature %q does not verify over the body with the secret", r.header.Get(webhook.SignatureHeader))
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > time.Minute {
		t.Fatalf("signature time %q is not now", ts)
	}
}

func TestDeliverySignedAndRetriedAfterServerError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	rc := newReceiver(t, http.StatusInternalServerError)
	hook, secret, err := f.db.CreateWebhook(ctx, nil, rc.policy(), f.project, rc.srv.URL+"/hook", []attune.WebhookEvent{attune.EventGoldChanged})
	if err != nil {
		t.Fatal(err)
	}
	events := f.work(t, fastSender(f, rc.policy()))
	if err := f.db.Announce(ctx, f.project, attune.EventGoldChanged, map[string]any{"item_id": 7}); err != nil {
		t.Fatal(err)
	}
	first, second := <-rc.got, <-rc.got
	if e := awaitFinal(t, events); e.Kind != river.EventKindJobCompleted {
		t.Fatalf("job ended %s, want completed", e.Kind)
	}
	for _, r := range []received{first, second} {
		verify(t, secret, r)
	}
	if first.header.Get(webhook.DeliveryHeader) == "" || first.header.Get(webhook.DeliveryHeader) != second.header.Get(webhook.DeliveryHeader) {
		t.Fatalf("delivery ids %q then %q, want one id for both attempts", first.header.Get(webhook.DeliveryHeader), second.header.Get(webhook.DeliveryHeader))
	}
	var body struct {
		ID         string         `json:"id"`
		Event      string         `json:"event"`
		Project    map[string]any `json:"project"`
		OccurredAt time.Time      `json:"occurred_at"`
		Data       map[string]any `json:"data"`
	}
	if err := json.Unmarshal(second.body, &body); err != nil {
		t.Fatal(err)
	}
	if body.ID != second.header.Get(webhook.DeliveryHeader) || body.Event != "gold.changed" || body.Project["name"] != "hooked" ||
		body.Data["item_id"] != float64(7) || body.OccurredAt.IsZero() {
		t.Fatalf("body %s", second.body)
	}

	ds, err := f.db.ListWebhookDeliveries(ctx, f.project, hook.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].State != "delivered" || len(ds[0].Attempts) != 2 {
		t.Fatalf("deliveries %+v, want one delivered after 2 attempts", ds)
	}
	a1, a2 := ds[0].Attempts[0], ds[0].Attempts[1]
	if a1.Status != 500 || a1.Error == "" || a1.Response != "answer 500" || a2.Status != 200 || a2.Error != "" {
		t.Fatalf("attempts %+v, want a 500 then a 200", ds[0].Attempts)
	}
	// Another project sees none of them.
	other, err := f.db.ListWebhookDeliveries(ctx, f.project+1, hook.ID, 10)
	if err != nil || len(other) != 0 {
		t.Fatalf("another project's view: %v, %v", other, err)
	}
}

func TestDeliveryGivesUpAfterItsAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	statuses := make([]int, store.WebhookMaxAttempts)
	for i := range statuses {
		statuses[i] = http.StatusServiceUnavailable
	}
	rc := newReceiver(t, statuses...)
	hook, _, err := f.db.CreateWebhook(ctx, nil, rc.policy(), f.project, rc.srv.URL, []attune.WebhookEvent{attune.EventRunPaused})
	if err != nil {
		t.Fatal(err)
	}
	events := f.work(t, fastSender(f, rc.policy()))
	if err := f.db.Announce(ctx, f.project, attune.EventRunPaused, nil); err != nil {
		t.Fatal(err)
	}
	if e := awaitFinal(t, events); e.Kind != river.EventKindJobCancelled {
		t.Fatalf("job ended %s, want cancelled after its last attempt", e.Kind)
	}
	ds, err := f.db.ListWebhookDeliveries(ctx, f.project, hook.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].State != "failed" || len(ds[0].Attempts) != store.WebhookMaxAttempts {
		t.Fatalf("deliveries %+v, want one failed after %d attempts", ds, store.WebhookMaxAttempts)
	}
}

func TestDisallowedURLRefusedAtSaveAndAtSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	rc := newReceiver(t)
	// Saved: loopback is refused unless listed, and "*" lists only public
	// hosts.
	for _, p := range []attune.JudgePolicy{{}, {Hosts: []attune.HostRule{{Any: true}}}} {
		_, _, err := f.db.CreateWebhook(ctx, nil, p, f.project, rc.srv.URL, []attune.WebhookEvent{attune.EventGoldChanged})
		var v *attune.ValidationError
		if !errors.As(err, &v) || !strings.Contains(v.Fields["url"], "ATTUNE_JUDGE_HOSTS") {
			t.Fatalf("save under %v: %v, want the URL refused", p.Hosts, err)
		}
	}
	for _, u := range []string{"http://169.254.169.254/latest", "ftp://example.org", "https://user:pw@example.org/"} {
		if _, _, err := f.db.CreateWebhook(ctx, nil, attune.JudgePolicy{Hosts: []attune.HostRule{{Any: true}}}, f.project, u, []attune.WebhookEvent{attune.EventGoldChanged}); !errors.Is(err, attune.ErrInvalid) {
			t.Fatalf("save %s: %v, want invalid", u, err)
		}
	}
	// Sent: a webhook saved while its host was allowed is held to the
	// rule of the sender's day; nothing connects and nothing is retried.
	hook, _, err := f.db.CreateWebhook(ctx, nil, rc.policy(), f.project, rc.srv.URL, []attune.WebhookEvent{attune.EventGoldChanged})
	if err != nil {
		t.Fatal(err)
	}
	events := f.work(t, fastSender(f, attune.JudgePolicy{Hosts: []attune.HostRule{{Any: true}}}))
	if err := f.db.Announce(ctx, f.project, attune.EventGoldChanged, nil); err != nil {
		t.Fatal(err)
	}
	if e := awaitFinal(t, events); e.Kind != river.EventKindJobCancelled {
		t.Fatalf("job ended %s, want cancelled", e.Kind)
	}
	select {
	case r := <-rc.got:
		t.Fatalf("the receiver got %s", r.body)
	default:
	}
	ds, err := f.db.ListWebhookDeliveries(ctx, f.project, hook.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].State != "failed" || len(ds[0].Attempts) != 1 || !strings.Contains(ds[0].Attempts[0].Error, "ATTUNE_JUDGE_HOSTS") {
		t.Fatalf("deliveries %+v, want one failed attempt naming the policy", ds)
	}
}

// TestSentByTheJudgeRunnersQueue checks the wiring of attune serve: the
// sender joins the judge runner's queue client, which then delivers.
func TestSentByTheJudgeRunnersQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	rc := newReceiver(t)
	if _, _, err := f.db.CreateWebhook(ctx, nil, rc.policy(), f.project, rc.srv.URL, []attune.WebhookEvent{attune.EventImportFinished}); err != nil {
		t.Fatal(err)
	}
	s := fastSender(f, rc.policy())
	runner, err := judge.NewRunner(f.db, judge.RunnerOptions{Policy: rc.policy(), Also: []judge.AddWorkers{s.Register}})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Stop(ctx) })
	if err := f.db.Announce(ctx, f.project, attune.EventImportFinished, map[string]any{"kind": "items"}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-rc.got:
		if r.header.Get(webhook.EventHeader) != "import.finished" {
			t.Fatalf("event header %q", r.header.Get(webhook.EventHeader))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nothing delivered within 30s")
	}
}
