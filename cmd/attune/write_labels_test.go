package main

import (
	"context"
	"testing"

	"github.com/attune/attune/internal/store"
)

// writeQueuedLabels writes the label rows of answer sets submitted but not
// yet turned into rows (the settler's work), before a test reads the
// labels table itself rather than through the store.
func writeQueuedLabels(t testing.TB, db *store.DB) {
	t.Helper()
	if err := db.WriteQueuedLabels(context.Background()); err != nil {
		t.Fatal(err)
	}
}
