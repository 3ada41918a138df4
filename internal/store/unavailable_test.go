package store

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/attune/attune/internal/attune"
)

func TestUnavailable(t *testing.T) {
	t.Parallel()
	// A real connection error: nothing listens on port 1.
	_, connectErr := pgx.Connect(context.Background(), "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2")
	if connectErr == nil {
		t.Fatal("connected to port 1")
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused connection", fmt.Errorf("store: x: %w", connectErr), true},
		{"connection cut mid-statement", fmt.Errorf("store: x: %w", io.ErrUnexpectedEOF), true},
		{"closed connection", pgconn.ErrConnClosed, true},
		{"server shutting down", &pgconn.PgError{Code: "57P01"}, true},
		{"standby refusing a write", &pgconn.PgError{Code: "25006"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"not found", attune.NotFound("x"), false},
		{"nil", nil, false},
		{"context cancelled", context.Canceled, false},
	} {
		if got := Unavailable(tc.err); got != tc.want {
			t.Errorf("%s: Unavailable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
