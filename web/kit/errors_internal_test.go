package kit

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestClientCancelIsNotAServerError: a handler failing only because its
// client went away (a draft save the browser cancelled) is logged at info
// as a client cancel, not as a 500 error; the same error while the client
// still waits is a server error.
func TestClientCancelIsNotAServerError(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s := &Kit{Log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	h := s.H(func(w http.ResponseWriter, r *http.Request) error {
		return fmt.Errorf("store: save draft: %w", r.Context().Err())
	})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodPost, "/projects/1/items/2/draft", nil))
	out := logs.String()
	if rec.Code != statusClientClosed || strings.Contains(out, `"level":"ERROR"`) || !strings.Contains(out, `"level":"INFO","msg":"request cancelled by the client"`) {
		t.Fatalf("status %d, logs %s; want %d logged at info as a client cancel", rec.Code, out, statusClientClosed)
	}

	logs.Reset()
	h = s.H(func(w http.ResponseWriter, r *http.Request) error {
		return fmt.Errorf("store: save draft: %w", context.Canceled) // cancelled inside, client waiting
	})
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/projects/1/items/2/draft", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(logs.String(), `"level":"ERROR","msg":"server error"`) {
		t.Fatalf("status %d, logs %s; want a logged 500", rec.Code, logs.String())
	}
}
